// The `info os` documents (qXfer:osdata:read:TYPE): for each type the
// columns gdbserver 13.1 sends, in its order, under its names, with its
// type attribute, and every item carrying every column.
#include <catch2/catch.hpp>

#include "protocol/osdata_xml.h"

namespace test_osdata_xml {  // this file's own names, apart in a unity build

using namespace protocol;

TEST_CASE("osdata processes document", "[osdata][xml]") {
  std::vector<OsProcess> processes = {
      {1, "root", "/sbin/init splash", {0}},
      {0x4d2, "user", "./prog <a&b>", {0, 1}},
  };
  CHECK(osdata_processes_xml(processes) ==
        "<osdata type=\"processes\">\n"
        "<item>"
        "<column name=\"pid\">1</column>"
        "<column name=\"user\">root</column>"
        "<column name=\"command\">/sbin/init splash</column>"
        "<column name=\"cores\">0</column>"
        "</item>"
        "<item>"
        "<column name=\"pid\">1234</column>"
        "<column name=\"user\">user</column>"
        "<column name=\"command\">./prog &lt;a&amp;b&gt;</column>"
        "<column name=\"cores\">0,1</column>"
        "</item>"
        "</osdata>\n");
  // A process whose threads' cores are unknown still has every column.
  CHECK(osdata_processes_xml({{7, "?", "", {}}}) ==
        "<osdata type=\"processes\">\n"
        "<item><column name=\"pid\">7</column><column name=\"user\">?</column>"
        "<column name=\"command\"></column><column name=\"cores\"></column></item>"
        "</osdata>\n");
  CHECK(osdata_processes_xml({}) == "<osdata type=\"processes\">\n</osdata>\n");
}

TEST_CASE("osdata types document lists gdbserver's ten types", "[osdata][xml]") {
  std::string doc = osdata_types_xml();
  CHECK(doc.rfind("<osdata type=\"types\">\n<item><column name=\"Type\">cpus</column>"
                  "<column name=\"Description\">Listing of all cpus/cores on the system</column>"
                  "<column name=\"Title\">CPUs</column></item>", 0) == 0);
  CHECK(doc.find("<item><column name=\"Type\">threads</column>"
                 "<column name=\"Description\">Listing of all threads</column>"
                 "<column name=\"Title\">Threads</column></item></osdata>\n") != std::string::npos);
  std::vector<std::string> names;
  for (const auto& type : osdata_types()) names.push_back(type.type);
  CHECK(names == std::vector<std::string>{"cpus", "files", "modules", "msg", "processes", "procgroups", "semaphores",
                                          "shm", "sockets", "threads"});
}

TEST_CASE("osdata cpus: one item per processor, values as read", "[osdata][xml]") {
  std::vector<OsCpu> cpus = {{{{"processor", " 0\n"}, {"model name", " A<B>\n"}}}, {{{"processor", " 1\n"}}}};
  CHECK(osdata_cpus_xml(cpus) ==
        "<osdata type=\"cpus\">\n"
        "<item><column name=\"processor\"> 0\n</column><column name=\"model name\"> A&lt;B&gt;\n</column></item>"
        "<item><column name=\"processor\"> 1\n</column></item>"
        "</osdata>\n");
  CHECK(osdata_cpus_xml({}) == "<osdata type=\"cpus\">\n</osdata>\n");
}

TEST_CASE("osdata files", "[osdata][xml]") {
  CHECK(osdata_files_xml({{42, "prog", "3", "/tmp/a&b"}}) ==
        "<osdata type=\"files\">\n<item>"
        "<column name=\"pid\">42</column><column name=\"command\">prog</column>"
        "<column name=\"file descriptor\">3</column><column name=\"name\">/tmp/a&amp;b</column>"
        "</item></osdata>\n");
}

TEST_CASE("osdata modules: address in hex without 0x", "[osdata][xml]") {
  CHECK(osdata_modules_xml({{"kvm", 1234, 2, "kvm_intel,", "Live", 0xffffffffc0a00000ULL}}) ==
        "<osdata type=\"modules\">\n<item>"
        "<column name=\"name\">kvm</column><column name=\"size\">1234</column>"
        "<column name=\"num uses\">2</column><column name=\"dependencies\">kvm_intel,</column>"
        "<column name=\"status\">Live</column><column name=\"address\">ffffffffc0a00000</column>"
        "</item></osdata>\n");
}

TEST_CASE("osdata procgroups", "[osdata][xml]") {
  CHECK(osdata_procgroups_xml({{5, "sh", 6, "sleep 1 "}}) ==
        "<osdata type=\"process groups\">\n<item>"
        "<column name=\"pgid\">5</column><column name=\"leader command\">sh</column>"
        "<column name=\"pid\">6</column><column name=\"command line\">sleep 1 </column>"
        "</item></osdata>\n");
}

TEST_CASE("osdata threads: an unknown core is -1", "[osdata][xml]") {
  CHECK(osdata_threads_xml({{5, "prog", 6, 1}, {5, "prog", 7, -1}}) ==
        "<osdata type=\"threads\">\n"
        "<item><column name=\"pid\">5</column><column name=\"command\">prog</column>"
        "<column name=\"tid\">6</column><column name=\"core\">1</column></item>"
        "<item><column name=\"pid\">5</column><column name=\"command\">prog</column>"
        "<column name=\"tid\">7</column><column name=\"core\">-1</column></item>"
        "</osdata>\n");
}

TEST_CASE("osdata sockets: states, families, protocols", "[osdata][xml]") {
  CHECK(std::string(socket_state_name(1)) == "ESTABLISHED");
  CHECK(std::string(socket_state_name(10)) == "LISTEN");
  CHECK(std::string(socket_state_name(11)) == "CLOSING");
  CHECK(std::string(socket_state_name(0)) == "(unknown)");
  CHECK(std::string(socket_state_name(12)) == "(unknown)");
  std::vector<OsSocket> sockets = {{"127.0.0.1", "80", "0.0.0.0", "0", 10, "root", SocketFamily::Inet, true},
                                   {"::1", "53", "::", "0", 7, "", SocketFamily::Inet6, false}};
  CHECK(osdata_sockets_xml(sockets) ==
        "<osdata type=\"I sockets\">\n"
        "<item><column name=\"local address\">127.0.0.1</column><column name=\"local port\">80</column>"
        "<column name=\"remote address\">0.0.0.0</column><column name=\"remote port\">0</column>"
        "<column name=\"state\">LISTEN</column><column name=\"user\">root</column>"
        "<column name=\"family\">INET</column><column name=\"protocol\">STREAM</column></item>"
        "<item><column name=\"local address\">::1</column><column name=\"local port\">53</column>"
        "<column name=\"remote address\">::</column><column name=\"remote port\">0</column>"
        "<column name=\"state\">CLOSE</column><column name=\"user\"></column>"
        "<column name=\"family\">INET6</column><column name=\"protocol\">DGRAM</column></item>"
        "</osdata>\n");
}

TEST_CASE("osdata shm: permissions in octal, empty times", "[osdata][xml]") {
  OsSharedMemory region;
  region.key = -1;
  region.shmid = 3;
  region.permissions = 0644;
  region.size = 4096;
  region.creator_command = "ipcmk";
  region.last_command = "";
  region.attached = 0;
  region.owners = {"root", "root", "u", "g"};
  region.change_time = "Fri Nov 27 11:45:42 2026\n";
  CHECK(osdata_shm_xml({region}) ==
        "<osdata type=\"shared memory\">\n<item>"
        "<column name=\"key\">-1</column><column name=\"shmid\">3</column>"
        "<column name=\"permissions\">644</column><column name=\"size\">4096</column>"
        "<column name=\"creator command\">ipcmk</column><column name=\"last op. command\"></column>"
        "<column name=\"num attached\">0</column><column name=\"user\">root</column>"
        "<column name=\"group\">root</column><column name=\"creator user\">u</column>"
        "<column name=\"creator group\">g</column><column name=\"last shmat() time\"></column>"
        "<column name=\"last shmdt() time\"></column>"
        "<column name=\"last shmctl() time\">Fri Nov 27 11:45:42 2026\n</column>"
        "</item></osdata>\n");
}

TEST_CASE("osdata semaphores", "[osdata][xml]") {
  OsSemaphoreSet set{12345, 7, 0600, 1, {"a", "b", "c", "d"}, "", "T\n"};
  CHECK(osdata_semaphores_xml({set}) ==
        "<osdata type=\"semaphores\">\n<item>"
        "<column name=\"key\">12345</column><column name=\"semid\">7</column>"
        "<column name=\"permissions\">600</column><column name=\"num semaphores\">1</column>"
        "<column name=\"user\">a</column><column name=\"group\">b</column>"
        "<column name=\"creator user\">c</column><column name=\"creator group\">d</column>"
        "<column name=\"last semop() time\"></column><column name=\"last semctl() time\">T\n</column>"
        "</item></osdata>\n");
}

TEST_CASE("osdata msg", "[osdata][xml]") {
  OsMessageQueue queue{1, 2, 0666, 10, 1, "snd", "", {"a", "b", "c", "d"}, "S\n", "", "C\n"};
  CHECK(osdata_msg_xml({queue}) ==
        "<osdata type=\"message queues\">\n<item>"
        "<column name=\"key\">1</column><column name=\"msqid\">2</column>"
        "<column name=\"permissions\">666</column><column name=\"num used bytes\">10</column>"
        "<column name=\"num messages\">1</column><column name=\"last msgsnd() command\">snd</column>"
        "<column name=\"last msgrcv() command\"></column>"
        "<column name=\"user\">a</column><column name=\"group\">b</column>"
        "<column name=\"creator user\">c</column><column name=\"creator group\">d</column>"
        "<column name=\"last msgsnd() time\">S\n</column><column name=\"last msgrcv() time\"></column>"
        "<column name=\"last msgctl() time\">C\n</column>"
        "</item></osdata>\n");
  CHECK(osdata_msg_xml({}) == "<osdata type=\"message queues\">\n</osdata>\n");
}

}  // namespace test_osdata_xml
