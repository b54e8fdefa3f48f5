#!/bin/sh
# embed-array.sh NAME FILE HEADER — writes to stdout a C file that defines
# `const char NAME[]` (FILE's bytes followed by a NUL) and
# `const size_t NAME_len` (without the NUL), declared in HEADER. Only od and
# sed (coreutils, always there): no xxd needed on a fresh machine.
set -eu
name=$1
file=$2
header=$3
echo "/* Generated from $file by scripts/embed-array.sh: do not edit. */"
echo "#include \"$header\""
echo "const char ${name}[] = {"
od -An -v -tx1 "$file" | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'
echo "0x00};"
echo "const size_t ${name}_len = sizeof ${name} - 1;"
