/*  drv_utf8 — strict UTF-8 checking and U+FFFD replacement.
    The ranges are Table 3-7 of the Unicode standard: the second byte's range
    depends on the first, which is what rules out overlongs (E0 80..9F,
    F0 80..8F), surrogates (ED A0..BF) and code points past U+10FFFF
    (F4 90.., F5..FF). */
#include "drover/drv_utf8.h"

#include <stdarg.h>
#include <stdio.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t drv_utf8_seq(const unsigned char *s, size_t len, size_t *bad)
{
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xbf; // allowed range of the second byte
    if (c < 0x80) {
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        need = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
        *bad = 1;
        return 0;
    }
    size_t i = 1;
    for (; i <= need; i++) {
        if (i >= len) {
            break;
        }
        unsigned char min = i == 1 ? lo : 0x80, max = i == 1 ? hi : 0xbf;
        if (s[i] < min || s[i] > max) {
            break;
        }
    }
    if (i == need + 1) {
        return need + 1;
    }
    *bad = i; // the lead byte and the continuation bytes that were fine
    return 0;
}

bool drv_utf8_valid(const char *s, size_t len, bool allow_nul)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        uint64_t word;
        if (len - i >= 8 && (memcpy(&word, p + i, 8), (word & 0x8080808080808080ull) == 0) &&
            (allow_nul || ((word - 0x0101010101010101ull) & ~word & 0x8080808080808080ull) == 0)) {
            i += 8; // eight ASCII bytes (and no NUL unless allowed) at once
            continue;
        }
        if (p[i] < 0x80) { // ASCII, in the tail a word did not cover
            if (p[i] == 0 && !allow_nul) {
                return false;
            }
            i++;
            continue;
        }
        size_t bad;
        size_t n = drv_utf8_seq(p + i, len - i, &bad);
        if (n == 0) {
            return false;
        }
        i += n;
    }
    return true;
}

char *drv_utf8_sanitize(const char *s, size_t len)
{
    //  Each input byte becomes at most three output bytes (U+FFFD).
    char *out = malloc(len * 3 + 1);
    if (!out) {
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < len) {
        size_t bad = 1;
        size_t n = p[i] ? drv_utf8_seq(p + i, len - i, &bad) : 0;
        if (n) {
            memcpy(out + o, p + i, n);
            o += n;
            i += n;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i += bad;
        }
    }
    out[o] = 0;
    return out;
}

size_t drv_utf8_snprintf(char *buf, size_t size, const char *fmt, ...)
{
    if (size == 0) {
        return 0;
    }
    va_list args;
    va_start(args, fmt);
    int wanted = vsnprintf(buf, size, fmt, args);
    va_end(args);
    size_t len = strlen(buf);
    if (wanted < 0 || (size_t)wanted < size) {
        return len;
    }
    //  Cut short: drop a last character the cut split (at most 3 bytes of it).
    size_t start = len;
    while (start > 0 && len - start < 4 && ((unsigned char)buf[start - 1] & 0xC0) == 0x80) {
        start--;
    }
    if (start > 0 && ((unsigned char)buf[start - 1] & 0x80)) {
        size_t bad;
        start--;
        if (drv_utf8_seq((const unsigned char *)buf + start, len - start, &bad) != len - start) {
            buf[start] = 0;
            len = start;
        }
    }
    return len;
}

char *drv_utf8_escape(const char *s, size_t len)
{
    char *out = malloc(4 * len + 1), *at = out;
    if (!out) {
        return NULL;
    }
    for (size_t i = 0; i < len;) {
        size_t bad = 0, n = s[i] ? drv_utf8_seq((const unsigned char *)s + i, len - i, &bad) : 0;
        if (n > 0) {
            memcpy(at, s + i, n);
            at += n;
            i += n;
            continue;
        }
        for (size_t k = 0; k < (bad ? bad : 1); k++, i++) {
            at += sprintf(at, "\\x%02x", (unsigned char)s[i]);
        }
    }
    *at = 0;
    return out;
}
