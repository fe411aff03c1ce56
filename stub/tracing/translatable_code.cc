#include "stub/tracing/translatable_code.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

#include "stub/process/proc_maps.h"

namespace stub::tracing {

namespace {

// One /proc/PID/maps line: "begin-end perms offset dev inode   path".
struct MapsLine {
  uint64_t begin = 0;
  uint64_t end = 0;
  std::string perms;
  std::string file_id;  // "dev inode"; empty for anonymous memory
  std::string path;
  std::string text;     // the line itself
};

bool parse_line(const std::string& line, MapsLine& out) {
  out.text = line;
  std::istringstream in(line);
  std::string range, offset, dev, inode;
  if (!(in >> range >> out.perms >> offset >> dev >> inode)) return false;
  std::getline(in, out.path);
  out.path.erase(0, out.path.find_first_not_of(' '));
  out.file_id = inode == "0" ? "" : dev + " " + inode;
  const auto dash = range.find('-');
  if (dash == std::string::npos) return false;
  const char* text = range.data();
  const auto first = std::from_chars(text, text + dash, out.begin, 16);
  const auto second = std::from_chars(text + dash + 1, text + range.size(), out.end, 16);
  return first.ec == std::errc() && second.ec == std::errc() && out.perms.size() >= 4;
}

// Code that changes only through a system call (translatable_code.h):
// `written`, a file some mapping stores to shared.
bool fixed_code(const MapsLine& line, bool written) {
  const std::string& perms = line.perms;
  const std::string& path = line.path;
  // Shared ('s'): another process may write the object mapped.
  if (written || perms[0] != 'r' || perms[1] != '-' || perms[2] != 'x' || perms[3] != 'p') return false;
  if (path.empty() || path[0] != '/' || path.rfind("/memfd:", 0) == 0) return false;
  if (path.size() >= 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0) return false;
  return line.begin < line.end;
}

bool shared_writable(const MapsLine& line) { return line.perms[1] == 'w' && line.perms[3] == 's'; }

// The lines of a maps text, and the files some mapping stores to, shared.
std::vector<MapsLine> parse_lines(const std::string& maps_text, std::set<std::string>& written_files) {
  std::vector<MapsLine> lines;
  std::istringstream in(maps_text);
  for (std::string text; std::getline(in, text);) {
    MapsLine line;
    if (!parse_line(text, line)) continue;
    if (shared_writable(line) && !line.file_id.empty()) written_files.insert(line.file_id);
    lines.push_back(std::move(line));
  }
  return lines;
}

// The executable mappings of `maps_text` that `pick(line, written)` picks
// (`written`: a file some mapping stores to shared), adjacent ones joined.
template <typename Pick>
AddressRanges executable_ranges(const std::string& maps_text, const Pick& pick) {
  std::set<std::string> written_files;
  AddressRanges ranges;
  for (const MapsLine& line : parse_lines(maps_text, written_files)) {
    if (line.perms[2] != 'x' || line.begin >= line.end) continue;
    if (!pick(line, written_files.count(line.file_id) != 0)) continue;
    if (!ranges.empty() && ranges.back().second == line.begin) {
      ranges.back().second = line.end;
    } else {
      ranges.emplace_back(line.begin, line.end);
    }
  }
  return ranges;
}

}  // namespace

AddressRanges writable_code(const std::string& maps_text) {
  return executable_ranges(maps_text, [](const MapsLine& line, bool written) {
    return line.perms[1] == 'w' || line.perms[3] == 's' || written;
  });
}

AddressRanges changeable_code(const std::string& maps_text) {
  return executable_ranges(maps_text, [](const MapsLine& line, bool written) {
    if (line.path == "[vdso]" || line.path == "[vsyscall]") return false;
    return !fixed_code(line, written);
  });
}

uint64_t first_met(const AddressRanges& ranges, uint64_t begin, uint64_t end) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), begin,
                             [](uint64_t a, const std::pair<uint64_t, uint64_t>& r) { return a < r.second; });
  if (it == ranges.end() || it->first >= end) return end;
  return std::max(it->first, begin);
}

bool meets(const AddressRanges& ranges, uint64_t begin, uint64_t end) { return first_met(ranges, begin, end) < end; }

TranslatableCode TranslatableCode::parse(const std::string& maps_text) {
  std::set<std::string> written_files;  // files some mapping can store to, shared
  const std::vector<MapsLine> lines = parse_lines(maps_text, written_files);
  TranslatableCode code;
  for (const MapsLine& line : lines) {
    if (!fixed_code(line, written_files.count(line.file_id) != 0)) continue;
    code.regions_.push_back({line.begin, line.end, line.path});
    code.source_ += line.text;
    code.source_ += '\n';
    code.lines_.push_back(line.text);
  }
  std::sort(code.lines_.begin(), code.lines_.end());
  std::sort(code.regions_.begin(), code.regions_.end(),
            [](const CodeRegion& a, const CodeRegion& b) { return a.begin < b.begin; });
  return code;
}

TranslatableCode TranslatableCode::read(pid_t pid) { return parse(process::read_maps_text(pid).value_or("")); }

bool TranslatableCode::keeps(const TranslatableCode& older) const {
  return std::includes(lines_.begin(), lines_.end(), older.lines_.begin(), older.lines_.end());
}

bool TranslatableCode::overlaps(uint64_t begin, uint64_t end) const {
  return std::any_of(regions_.begin(), regions_.end(),
                     [&](const CodeRegion& r) { return begin < r.end && r.begin < end; });
}

bool TranslatableCode::maps_file(const std::string& path) const {
  return std::any_of(regions_.begin(), regions_.end(), [&](const CodeRegion& r) { return r.path == path; });
}

const CodeRegion* TranslatableCode::region_of(uint64_t address) const {
  auto it = std::upper_bound(regions_.begin(), regions_.end(), address,
                             [](uint64_t a, const CodeRegion& r) { return a < r.begin; });
  if (it == regions_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

}  // namespace stub::tracing
