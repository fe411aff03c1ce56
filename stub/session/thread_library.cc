#include "stub/session/thread_library.h"

namespace stub::session {

ThreadLibrary::ThreadLibrary(Opener open, ThreadDbTarget target) : open_(std::move(open)), target_(std::move(target)) {
  target_.look_up = [this](std::string_view name) { return look_up(name); };
}

std::optional<std::string> ThreadLibrary::start_round(const std::string& search_path) {
  // Not attached yet (the program had not loaded libc's threads then):
  // found again from the search path as it is now, as gdbserver loads
  // libthread_db anew at each try (no-thread-db.exp sets a path that
  // holds none after connecting, and TLS must then fail).
  if (db_ != nullptr && !db_->attached()) db_.reset();
  if (db_ == nullptr) {
    auto db = open_(target_, search_path);
    if (!db) {
      open_error_ = db.error();
      return std::nullopt;
    }
    db_ = std::move(*db);
  }
  asked_.clear();
  if (!all_looked_up_) std::erase_if(answers_, [](const auto& entry) { return !entry.second.has_value(); });
  return next_question();
}

std::optional<std::string> ThreadLibrary::answer(const std::string& name, std::optional<uint64_t> address) {
  answers_[name] = address;
  asked_.insert(name);
  return next_question();
}

std::optional<std::string> ThreadLibrary::next_question() {
  if (db_ == nullptr || all_looked_up_) return std::nullopt;
  if (!db_->attached()) {
    wanted_.clear();
    if (!db_->attach()) {
      if (wanted_.empty()) return std::nullopt;  // not for lack of a symbol: next round
      asked_.insert(wanted_);
      return wanted_;
    }
  }
  for (auto& name : db_->symbols()) {
    if (answers_.contains(name) || asked_.contains(name)) continue;
    asked_.insert(name);
    return name;
  }
  all_looked_up_ = true;
  return std::nullopt;
}

std::optional<uint64_t> ThreadLibrary::look_up(std::string_view name) {
  if (auto known = answers_.find(name); known != answers_.end()) return known->second;
  if (!all_looked_up_ && wanted_.empty() && !asked_.contains(name)) wanted_ = std::string(name);
  return std::nullopt;
}

Expected<uint64_t> ThreadLibrary::tls_address(pid_t tid, uint64_t offset, uint64_t link_map) {
  if (db_ == nullptr) return open_error_;
  // gdbserver refuses until every symbol is looked up (and so do we: a
  // lookup now could not ask gdb).
  if (!all_looked_up_) {
    return btstub::make_error(btstub::ErrorCode::NotSupported,
                              "libthread_db is not attached to the program yet (no qSymbol exchange)");
  }
  return db_->tls_address(tid, offset, link_map);
}

}  // namespace stub::session
