#pragma once
// The `info os TYPE` tables (qXfer:osdata:read:TYPE) as gdbserver 13.1 lays
// them out: one typed row per item, turned into the osdata document here.
// The rows come from stub/process, which reads /proc; nothing here calls the
// OS, so every value that needs it (user and group names, commands, times)
// arrives as text.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace protocol {

// Every type `info os` lists, in gdbserver's order: {type, description, title}.
struct OsdataType {
  const char* type;
  const char* description;
  const char* title;
};
const std::vector<OsdataType>& osdata_types();
// qXfer:osdata:read with an empty annex: the list above, which `info os` prints.
std::string osdata_types_xml();

// processes: pid, owner, command line and the cores its threads last ran on.
struct OsProcess {
  int64_t pid = 0;
  std::string user;
  std::string command;
  std::vector<int> cores;  // cores the process's threads last ran on
};
std::string osdata_processes_xml(const std::vector<OsProcess>& processes);

// cpus: one item per "processor" block of /proc/cpuinfo, its key/value pairs
// as read (values keep their leading space and trailing newline, as
// gdbserver sends them).
struct OsCpu {
  std::vector<std::pair<std::string, std::string>> fields;
};
std::string osdata_cpus_xml(const std::vector<OsCpu>& cpus);

// files: every open descriptor of every readable process.
struct OsFile {
  int64_t pid = 0;
  std::string command;  // the short name (comm)
  std::string fd;       // the /proc/PID/fd entry's name
  std::string name;     // where it points (the fd itself if unreadable)
};
std::string osdata_files_xml(const std::vector<OsFile>& files);

// modules: /proc/modules.
struct OsModule {
  std::string name;
  uint32_t size = 0;
  int32_t uses = 0;
  std::string dependencies;
  std::string status;
  uint64_t address = 0;  // printed in hex without 0x
};
std::string osdata_modules_xml(const std::vector<OsModule>& modules);

// procgroups: every process by group, leaders first.
struct OsProcessGroupMember {
  int64_t pgid = 0;
  std::string leader_command;
  int64_t pid = 0;
  std::string command_line;
};
std::string osdata_procgroups_xml(const std::vector<OsProcessGroupMember>& members);

// threads: every thread of every process.
struct OsThread {
  int64_t pid = 0;
  std::string command;
  int64_t tid = 0;
  int core = -1;
};
std::string osdata_threads_xml(const std::vector<OsThread>& threads);

// sockets: TCP and UDP over IPv4 and IPv6.
enum class SocketFamily { Inet, Inet6 };
struct OsSocket {
  std::string local_address;
  std::string local_port;
  std::string remote_address;
  std::string remote_port;
  unsigned state = 0;  // the kernel's TCP state number (include/net/tcp_states.h)
  std::string user;
  SocketFamily family = SocketFamily::Inet;
  bool stream = true;  // TCP; false: UDP
};
// "ESTABLISHED", "LISTEN", ... or "(unknown)".
const char* socket_state_name(unsigned state);
std::string osdata_sockets_xml(const std::vector<OsSocket>& sockets);

// The System V IPC tables. Owners are {user, group, creator user, creator
// group}; times are ctime(3) text (with its newline), empty for "never".
struct OsIpcOwners {
  std::string user;
  std::string group;
  std::string creator_user;
  std::string creator_group;
};

struct OsSharedMemory {
  int32_t key = 0;
  int32_t shmid = 0;
  uint32_t permissions = 0;  // printed in octal
  int64_t size = 0;
  std::string creator_command;
  std::string last_command;
  int64_t attached = 0;
  OsIpcOwners owners;
  std::string attach_time;
  std::string detach_time;
  std::string change_time;
};
std::string osdata_shm_xml(const std::vector<OsSharedMemory>& regions);

struct OsSemaphoreSet {
  int32_t key = 0;
  int32_t semid = 0;
  uint32_t permissions = 0;
  uint32_t count = 0;
  OsIpcOwners owners;
  std::string op_time;
  std::string change_time;
};
std::string osdata_semaphores_xml(const std::vector<OsSemaphoreSet>& sets);

struct OsMessageQueue {
  int32_t key = 0;
  int32_t msqid = 0;
  uint32_t permissions = 0;
  uint32_t used_bytes = 0;
  uint32_t messages = 0;
  std::string send_command;
  std::string receive_command;
  OsIpcOwners owners;
  std::string send_time;
  std::string receive_time;
  std::string change_time;
};
std::string osdata_msg_xml(const std::vector<OsMessageQueue>& queues);

}  // namespace protocol
