#include "stub/tracing/translatable_code.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace stub::tracing {

namespace {

// One /proc/PID/maps line: "begin-end perms offset dev inode   path".
bool translatable_line(const std::string& line, CodeRegion& out) {
  std::istringstream in(line);
  std::string range, perms, offset, dev, inode;
  if (!(in >> range >> perms >> offset >> dev >> inode)) return false;
  std::string path;
  std::getline(in, path);
  path.erase(0, path.find_first_not_of(' '));
  if (perms.size() < 4 || perms[0] != 'r' || perms[1] != '-' || perms[2] != 'x') return false;
  if (path.empty() || path[0] != '/' || path.rfind("/memfd:", 0) == 0) return false;
  if (path.size() >= 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0) return false;
  const auto dash = range.find('-');
  if (dash == std::string::npos) return false;
  const char* text = range.data();
  const auto first = std::from_chars(text, text + dash, out.begin, 16);
  const auto second = std::from_chars(text + dash + 1, text + range.size(), out.end, 16);
  if (first.ec != std::errc() || second.ec != std::errc()) return false;
  return out.begin < out.end;
}

}  // namespace

TranslatableCode TranslatableCode::parse(const std::string& maps_text) {
  TranslatableCode code;
  std::istringstream in(maps_text);
  std::string line;
  while (std::getline(in, line)) {
    CodeRegion region;
    if (!translatable_line(line, region)) continue;
    code.regions_.push_back(region);
    code.source_ += line;
    code.source_ += '\n';
  }
  std::sort(code.regions_.begin(), code.regions_.end(),
            [](const CodeRegion& a, const CodeRegion& b) { return a.begin < b.begin; });
  return code;
}

TranslatableCode TranslatableCode::read(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str());
}

const CodeRegion* TranslatableCode::region_of(uint64_t address) const {
  auto it = std::upper_bound(regions_.begin(), regions_.end(), address,
                             [](uint64_t a, const CodeRegion& r) { return a < r.begin; });
  if (it == regions_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

}  // namespace stub::tracing
