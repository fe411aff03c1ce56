// vFile: host I/O, so gdb can read the program and its libraries from the
// target, and `remote put`/`get`/`delete` work on its files.
#include "stub/session/handlers.h"

namespace stub::session {

Reply handle(Session& s, const FileOpen& r) { return Reply::now(s.host_files.open(r.path, r.flags, r.mode)); }
Reply handle(Session& s, const FileClose& r) { return Reply::now(s.host_files.close(r.fd)); }
Reply handle(Session& s, const FilePread& r) { return Reply::now(s.host_files.pread(r.fd, r.count, r.offset)); }
Reply handle(Session& s, const FilePwrite& r) { return Reply::now(s.host_files.pwrite(r.fd, r.offset, r.data)); }
Reply handle(Session& s, const FileFstat& r) { return Reply::now(s.host_files.fstat(r.fd)); }
Reply handle(Session& s, const FileSetFs& r) { return Reply::now(s.host_files.setfs(r.pid)); }
Reply handle(Session& s, const FileReadlink& r) { return Reply::now(s.host_files.readlink(r.path)); }
Reply handle(Session& s, const FileUnlink& r) { return Reply::now(s.host_files.unlink(r.path)); }

}  // namespace stub::session
