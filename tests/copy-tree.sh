#!/bin/sh
# copy-tree.sh SRC DEST: the files of the git checkout SRC (tracked, and
# untracked but not ignored) copied into DEST, for a build of its own there:
# a VPATH build is refused once SRC is configured in place (as CI's is).
# Exit 77 where SRC is not a git checkout (the copy takes git's list).
src=$1 dest=$2
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || exit 77
rm -rf "$dest" && mkdir -p "$dest" || exit 1
(cd "$src" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$dest" -xf -
