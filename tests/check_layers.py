#!/usr/bin/env python3
"""Fails when a folder includes a header of a folder above it.

btstub's code is layered; each folder may include its own headers and those
of the folders below it, never one above:

    stub/server -> stub/session -> stub/replay -> stub/tracing -> stub/process
        -> decoder -> protocol

The table below is that rule; reading every #include "..." line of the code
folders, this script prints each include that breaks it and exits 1. It also
rejects an include of a file directly in stub/ (stub/ holds only the
subsystem folders), so a file cannot escape the check by sitting outside them.

Usage: check_layers.py [SOURCE_DIR]   (default: the repository holding this file)
"""
import pathlib
import re
import sys

# Folder -> the folders its files may include (besides its own).
ALLOWED = {
    "protocol": set(),
    "decoder": {"protocol"},
    "stub/process": {"decoder", "protocol"},
    "stub/tracing": {"stub/process", "decoder", "protocol"},
    "stub/replay": {"stub/tracing", "stub/process", "decoder", "protocol"},
    "stub/session": {"stub/replay", "stub/tracing", "stub/process", "decoder", "protocol"},
    "stub/server": {"stub/session", "stub/replay", "stub/tracing", "stub/process", "decoder", "protocol"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def folder_of(path):
    """The ALLOWED key a repository-relative path belongs to, or None."""
    parts = pathlib.PurePosixPath(path).parts
    for depth in (2, 1):
        key = "/".join(parts[:depth])
        if len(parts) > depth and key in ALLOWED:
            return key
    return None


def check(root):
    errors = []
    for folder in ALLOWED:
        base = root / folder
        if not base.is_dir():
            errors.append(f"{folder}/: missing (update the table in {pathlib.Path(__file__).name})")
            continue
        for source in sorted(base.rglob("*")):
            if source.suffix not in (".h", ".cc"):
                continue
            rel = source.relative_to(root).as_posix()
            for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = match.group(1)
                top = target.split("/", 1)[0]
                if top not in ("protocol", "decoder", "stub"):
                    continue  # a third-party or system header
                to = folder_of(target)
                if to is None:
                    errors.append(f"{rel}:{number}: includes {target}, which is in no layer of the table")
                elif to != folder and to not in ALLOWED[folder]:
                    errors.append(f"{rel}:{number}: {folder}/ includes {target}, but {to}/ is above it")
    # Every stub/ file sits in a subfolder of the table, so each is checked.
    stub = root / "stub"
    if stub.is_dir():
        for loose in sorted(p for p in stub.iterdir() if p.suffix in (".h", ".cc")):
            errors.append(f"stub/{loose.name}: in no subsystem folder of stub/")
        for sub in sorted(p for p in stub.iterdir() if p.is_dir()):
            if f"stub/{sub.name}" not in ALLOWED:
                errors.append(f"stub/{sub.name}/: not in the layer table of {pathlib.Path(__file__).name}")
    return errors


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    errors = check(root)
    for error in errors:
        print(error)
    if errors:
        print(f"{len(errors)} include(s) against the layering")
        return 1
    print("layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
