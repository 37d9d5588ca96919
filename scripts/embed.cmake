# Turns a file into C: const char NAME[] (NUL-terminated) and NAME_len.
#   cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR size "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){24})" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* Generated from ${IN} by scripts/embed.cmake; do not edit. */\n#include <stddef.h>\n"
    "const char ${NAME}[] = {\n${bytes}0x00};\nconst size_t ${NAME}_len = ${size};\n")
