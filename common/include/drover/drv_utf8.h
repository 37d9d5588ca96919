/*  drv_utf8 — strict UTF-8 (RFC 3629): no overlong forms, no surrogates,
    nothing above U+10FFFF. One checker for everything that enters through an
    API and everything written as JSON text. */
#ifndef DRV_UTF8_H
#define DRV_UTF8_H

#include <stdbool.h>
#include <stddef.h>

//  Length of the well-formed sequence at s (1-4), or 0 when s starts with
//  an ill-formed one; *bad is then the length of its maximal ill-formed
//  subpart (at least 1), which a replacing writer turns into one U+FFFD.
size_t drv_utf8_seq(const unsigned char *s, size_t len, size_t *bad);

//  True when all len bytes are well-formed UTF-8 and, unless allow_nul,
//  none is NUL.
bool drv_utf8_valid(const char *s, size_t len, bool allow_nul);

//  A NUL-terminated copy with every ill-formed subpart replaced by U+FFFD
//  and every NUL by U+FFFD (for messages that quote untrusted text).
//  Caller frees. NULL only when out of memory.
char *drv_utf8_sanitize(const char *s, size_t len);

//  A NUL-terminated copy with every byte of an ill-formed subpart (and
//  every NUL) written as \xNN, and backslashes as they are: for texts kept
//  to be read by people (a backend's answer), where the bytes matter.
//  Caller frees. NULL only when out of memory.
char *drv_utf8_escape(const char *s, size_t len);

//  snprintf for texts that are bounded: when the text does not fit, it is
//  cut at the last whole character that fits, never inside one (a cut
//  character makes the whole text unreadable to a strict UTF-8 reader:
//  JSON, protobuf strings). Returns the length written.
__attribute__((format(printf, 3, 4))) size_t drv_utf8_snprintf(char *buf, size_t size, const char *fmt, ...);

#endif
