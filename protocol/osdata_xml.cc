// The `info os` tables. Each document is <osdata type="T"> with one <item>
// per row and one <column name="..."> per field; gdb takes the table header
// from an item's columns, so every item carries all of them, in gdbserver's
// order, under gdbserver's names (and its type attributes, some of which,
// like "I sockets", differ from the annex).
#include "protocol/osdata_xml.h"

#include <cstdio>

#include "protocol/replies.h"

namespace protocol {

namespace {

// Builds one document: open(), then for each row item() and col()s.
class OsdataDocument {
 public:
  explicit OsdataDocument(std::string_view type) { out_ = "<osdata type=\"" + std::string(type) + "\">\n"; }

  OsdataDocument& item() {
    close_item();
    out_ += "<item>";
    in_item_ = true;
    return *this;
  }
  OsdataDocument& col(std::string_view name, std::string_view value) {
    out_ += "<column name=\"" + xml_escape(name) + "\">" + xml_escape(value) + "</column>";
    return *this;
  }
  OsdataDocument& col(std::string_view name, int64_t value) { return col(name, std::to_string(value)); }

  std::string finish() {
    close_item();
    out_ += "</osdata>\n";
    return std::move(out_);
  }

 private:
  void close_item() {
    if (in_item_) out_ += "</item>";
    in_item_ = false;
  }

  std::string out_;
  bool in_item_ = false;
};

std::string octal(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "%o", value);
  return text;
}

void owner_columns(OsdataDocument& doc, const OsIpcOwners& owners) {
  doc.col("user", owners.user)
      .col("group", owners.group)
      .col("creator user", owners.creator_user)
      .col("creator group", owners.creator_group);
}

}  // namespace

const std::vector<OsdataType>& osdata_types() {
  static const std::vector<OsdataType> types = {
      {"cpus", "Listing of all cpus/cores on the system", "CPUs"},
      {"files", "Listing of all file descriptors", "File descriptors"},
      {"modules", "Listing of all loaded kernel modules", "Kernel modules"},
      {"msg", "Listing of all message queues", "Message queues"},
      {"processes", "Listing of all processes", "Processes"},
      {"procgroups", "Listing of all process groups", "Process groups"},
      {"semaphores", "Listing of all semaphores", "Semaphores"},
      {"shm", "Listing of all shared-memory regions", "Shared-memory regions"},
      {"sockets", "Listing of all internet-domain sockets", "Sockets"},
      {"threads", "Listing of all threads", "Threads"},
  };
  return types;
}

std::string osdata_types_xml() {
  OsdataDocument doc("types");
  for (const auto& type : osdata_types()) {
    doc.item().col("Type", type.type).col("Description", type.description).col("Title", type.title);
  }
  return doc.finish();
}

std::string osdata_processes_xml(const std::vector<OsProcess>& processes) {
  OsdataDocument doc("processes");
  for (const auto& process : processes) {
    std::string cores;
    for (std::size_t i = 0; i < process.cores.size(); ++i) {
      if (i != 0) cores += ',';
      cores += std::to_string(process.cores[i]);
    }
    doc.item().col("pid", process.pid).col("user", process.user).col("command", process.command).col("cores", cores);
  }
  return doc.finish();
}

std::string osdata_cpus_xml(const std::vector<OsCpu>& cpus) {
  OsdataDocument doc("cpus");
  for (const auto& cpu : cpus) {
    doc.item();
    for (const auto& [key, value] : cpu.fields) doc.col(key, value);
  }
  return doc.finish();
}

std::string osdata_files_xml(const std::vector<OsFile>& files) {
  OsdataDocument doc("files");
  for (const auto& file : files) {
    doc.item().col("pid", file.pid).col("command", file.command).col("file descriptor", file.fd).col("name", file.name);
  }
  return doc.finish();
}

std::string osdata_modules_xml(const std::vector<OsModule>& modules) {
  OsdataDocument doc("modules");
  for (const auto& module : modules) {
    doc.item()
        .col("name", module.name)
        .col("size", module.size)
        .col("num uses", module.uses)
        .col("dependencies", module.dependencies)
        .col("status", module.status)
        .col("address", hex_number(module.address));
  }
  return doc.finish();
}

std::string osdata_procgroups_xml(const std::vector<OsProcessGroupMember>& members) {
  OsdataDocument doc("process groups");
  for (const auto& member : members) {
    doc.item()
        .col("pgid", member.pgid)
        .col("leader command", member.leader_command)
        .col("pid", member.pid)
        .col("command line", member.command_line);
  }
  return doc.finish();
}

std::string osdata_threads_xml(const std::vector<OsThread>& threads) {
  OsdataDocument doc("threads");
  for (const auto& thread : threads) {
    doc.item().col("pid", thread.pid).col("command", thread.command).col("tid", thread.tid).col("core", thread.core);
  }
  return doc.finish();
}

const char* socket_state_name(unsigned state) {
  static const char* const names[] = {"ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",  "FIN_WAIT2", "TIME_WAIT",
                                      "CLOSE",       "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING"};
  if (state >= 1 && state <= std::size(names)) return names[state - 1];
  return "(unknown)";
}

std::string osdata_sockets_xml(const std::vector<OsSocket>& sockets) {
  OsdataDocument doc("I sockets");
  for (const auto& socket : sockets) {
    doc.item()
        .col("local address", socket.local_address)
        .col("local port", socket.local_port)
        .col("remote address", socket.remote_address)
        .col("remote port", socket.remote_port)
        .col("state", socket_state_name(socket.state))
        .col("user", socket.user)
        .col("family", socket.family == SocketFamily::Inet ? "INET" : "INET6")
        .col("protocol", socket.stream ? "STREAM" : "DGRAM");
  }
  return doc.finish();
}

std::string osdata_shm_xml(const std::vector<OsSharedMemory>& regions) {
  OsdataDocument doc("shared memory");
  for (const auto& region : regions) {
    doc.item()
        .col("key", region.key)
        .col("shmid", region.shmid)
        .col("permissions", octal(region.permissions))
        .col("size", region.size)
        .col("creator command", region.creator_command)
        .col("last op. command", region.last_command)
        .col("num attached", region.attached);
    owner_columns(doc, region.owners);
    doc.col("last shmat() time", region.attach_time)
        .col("last shmdt() time", region.detach_time)
        .col("last shmctl() time", region.change_time);
  }
  return doc.finish();
}

std::string osdata_semaphores_xml(const std::vector<OsSemaphoreSet>& sets) {
  OsdataDocument doc("semaphores");
  for (const auto& set : sets) {
    doc.item()
        .col("key", set.key)
        .col("semid", set.semid)
        .col("permissions", octal(set.permissions))
        .col("num semaphores", set.count);
    owner_columns(doc, set.owners);
    doc.col("last semop() time", set.op_time).col("last semctl() time", set.change_time);
  }
  return doc.finish();
}

std::string osdata_msg_xml(const std::vector<OsMessageQueue>& queues) {
  OsdataDocument doc("message queues");
  for (const auto& queue : queues) {
    doc.item()
        .col("key", queue.key)
        .col("msqid", queue.msqid)
        .col("permissions", octal(queue.permissions))
        .col("num used bytes", queue.used_bytes)
        .col("num messages", queue.messages)
        .col("last msgsnd() command", queue.send_command)
        .col("last msgrcv() command", queue.receive_command);
    owner_columns(doc, queue.owners);
    doc.col("last msgsnd() time", queue.send_time)
        .col("last msgrcv() time", queue.receive_time)
        .col("last msgctl() time", queue.change_time);
  }
  return doc.finish();
}

}  // namespace protocol
