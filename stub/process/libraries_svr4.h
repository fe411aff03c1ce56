#pragma once
// gdb's qXfer:libraries-svr4 document, built by walking the dynamic linker's
// r_debug / link_map list in the inferior's memory (64-bit ELF only).
#include <string>

#include "stub/process/process.h"

namespace stub::process {

// The whole list, ignoring the "start=..;prev=.." annex (gdb copes with a
// full list). Before ld.so has filled in DT_DEBUG (e.g. at the first
// instruction) the document is valid and lists no libraries. A program
// without PT_DYNAMIC / DT_DEBUG (static) gives an error, as with gdbserver,
// so gdb falls back to its own probing.
Expected<std::string> libraries_svr4_xml(Process& process);

// Where ld.so stores r_debug's address: DT_DEBUG's value in the program's
// dynamic section (LLDB's qShlibInfoAddr). An error without one (static).
Expected<uint64_t> r_debug_slot(Process& process);

}  // namespace stub::process
