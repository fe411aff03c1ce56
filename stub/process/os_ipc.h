#pragma once
// The System V IPC `info os` tables: shm, semaphores and msg, from
// /proc/sysvipc/{shm,sem,msg}, with names for users, groups, commands and
// times as gdbserver 13.1 shows them.
#include <string>
#include <vector>

#include "protocol/osdata_xml.h"

namespace stub::process {

std::vector<protocol::OsSharedMemory> list_os_shared_memory(const std::string& path = "/proc/sysvipc/shm");
std::vector<protocol::OsSemaphoreSet> list_os_semaphores(const std::string& path = "/proc/sysvipc/sem");
std::vector<protocol::OsMessageQueue> list_os_message_queues(const std::string& path = "/proc/sysvipc/msg");

}  // namespace stub::process
