#pragma once
// How a program is started through a shell, as gdbserver does by default
// (--startup-with-shell): `$SHELL -c "exec WORDS"`, every word quoted so the
// shell passes it on unchanged (the program gets the argv it would get from
// a direct exec; gdbserver escapes its arguments for the same reason). The
// shell is what says why a program cannot run ("exec: prog: not found") and
// its exit status is what gdbserver reports then ("During startup program
// exited with code 127.").
#include <string>
#include <vector>

namespace stub::process {

// "'it'\''s'": one shell word whose value is `word`.
std::string shell_quote(const std::string& word);

// The argv that runs `words` (wrapper words, then the program and its
// arguments) through `shell`: {shell, "-c", "exec 'w1' 'w2' ..."}.
std::vector<std::string> shell_argv(const std::string& shell, const std::vector<std::string>& words);

// The shell gdbserver uses: $SHELL, else /bin/sh.
std::string startup_shell();

}  // namespace stub::process
