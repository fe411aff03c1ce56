#include "stub/process/os_ipc.h"

#include <cstdio>
#include <fstream>

#include "stub/process/os_proc_text.h"

namespace stub::process {

namespace {

// Each line of the file; the header line fails every row's parse.
std::vector<std::string> file_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  return lines;
}

protocol::OsIpcOwners owners(unsigned uid, unsigned gid, unsigned creator_uid, unsigned creator_gid) {
  return {user_name(uid), group_name(gid), user_name(creator_uid), group_name(creator_gid)};
}

}  // namespace

std::vector<protocol::OsSharedMemory> list_os_shared_memory(const std::string& path) {
  std::vector<protocol::OsSharedMemory> out;
  for (const auto& line : file_lines(path)) {
    protocol::OsSharedMemory row;
    int size = 0;
    int attached = 0;
    long long creator_pid = 0, last_pid = 0, attach_time = 0, detach_time = 0, change_time = 0;
    unsigned uid = 0, gid = 0, creator_uid = 0, creator_gid = 0;
    // key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime ctime
    if (std::sscanf(line.c_str(), "%d %d %o %d %lld %lld %d %u %u %u %u %lld %lld %lld", &row.key, &row.shmid,
                    &row.permissions, &size, &creator_pid, &last_pid, &attached, &uid, &gid, &creator_uid,
                    &creator_gid, &attach_time, &detach_time, &change_time) != 14) {
      continue;
    }
    row.size = size;
    row.attached = attached;
    row.creator_command = short_command(creator_pid);
    row.last_command = short_command(last_pid);
    row.owners = owners(uid, gid, creator_uid, creator_gid);
    row.attach_time = time_text(attach_time);
    row.detach_time = time_text(detach_time);
    row.change_time = time_text(change_time);
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<protocol::OsSemaphoreSet> list_os_semaphores(const std::string& path) {
  std::vector<protocol::OsSemaphoreSet> out;
  for (const auto& line : file_lines(path)) {
    protocol::OsSemaphoreSet row;
    int uid = 0, gid = 0, creator_uid = 0, creator_gid = 0;
    long long op_time = 0, change_time = 0;
    // key semid perms nsems uid gid cuid cgid otime ctime
    if (std::sscanf(line.c_str(), "%d %d %o %u %d %d %d %d %lld %lld", &row.key, &row.semid, &row.permissions,
                    &row.count, &uid, &gid, &creator_uid, &creator_gid, &op_time, &change_time) != 10) {
      continue;
    }
    row.owners = owners(uid, gid, creator_uid, creator_gid);
    row.op_time = time_text(op_time);
    row.change_time = time_text(change_time);
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<protocol::OsMessageQueue> list_os_message_queues(const std::string& path) {
  std::vector<protocol::OsMessageQueue> out;
  for (const auto& line : file_lines(path)) {
    protocol::OsMessageQueue row;
    long long send_pid = 0, receive_pid = 0, send_time = 0, receive_time = 0, change_time = 0;
    int uid = 0, gid = 0, creator_uid = 0, creator_gid = 0;
    // key msqid perms cbytes qnum lspid lrpid uid gid cuid cgid stime rtime ctime
    if (std::sscanf(line.c_str(), "%d %d %o %u %u %lld %lld %d %d %d %d %lld %lld %lld", &row.key, &row.msqid,
                    &row.permissions, &row.used_bytes, &row.messages, &send_pid, &receive_pid, &uid, &gid,
                    &creator_uid, &creator_gid, &send_time, &receive_time, &change_time) != 14) {
      continue;
    }
    row.send_command = short_command(send_pid);
    row.receive_command = short_command(receive_pid);
    row.owners = owners(uid, gid, creator_uid, creator_gid);
    row.send_time = time_text(send_time);
    row.receive_time = time_text(receive_time);
    row.change_time = time_text(change_time);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace stub::process
