/*  drv_prom_names — OpenTelemetry names as Prometheus names (drv_prom.h),
    as the Prometheus compatibility specification says: a character that
    may not stand in a name becomes _ (runs of them one _), the unit's
    word is appended, and a counter
    ends with _total (one already there moves after the unit). A unit's
    word that stands in the name already is not added again. Units in
    braces ({packet}) are annotations: they add nothing. */
#include "drv_prom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_units[][2] = {
    {"d", "days"},          {"h", "hours"},        {"min", "minutes"},   {"s", "seconds"},      {"ms", "milliseconds"},
    {"us", "microseconds"}, {"ns", "nanoseconds"}, {"By", "bytes"},      {"KiBy", "kibibytes"}, {"MiBy", "mebibytes"},
    {"GiBy", "gibibytes"},  {"TiBy", "tibibytes"}, {"KBy", "kilobytes"}, {"MBy", "megabytes"},  {"GBy", "gigabytes"},
    {"TBy", "terabytes"},   {"m", "meters"},       {"V", "volts"},       {"A", "amperes"},      {"J", "joules"},
    {"W", "watts"},         {"g", "grams"},        {"Cel", "celsius"},   {"Hz", "hertz"},       {"%", "percent"},
};
static const char *const s_per[][2] = {{"s", "second"}, {"m", "minute"}, {"h", "hour"}, {"d", "day"},
                                       {"w", "week"},   {"mo", "month"}, {"y", "year"}};

static const char *s_lookup(const char *const (*table)[2], size_t n, const char *unit, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        if (strlen(table[i][0]) == len && !memcmp(table[i][0], unit, len)) {
            return table[i][1];
        }
    }
    return NULL;
}

//  Appends text sanitized (invalid characters as _, no run of _ from them) to out.
static void s_append(char *out, size_t size, const char *text, size_t len)
{
    size_t at = strlen(out);
    for (size_t i = 0; i < len && at + 1 < size; i++) {
        char c = text[i];
        bool valid = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
        if (!valid) {
            if (at > 0 && out[at - 1] == '_') {
                continue;
            }
            c = '_';
        }
        out[at++] = c;
    }
    out[at] = 0;
}

static bool s_ends(const char *text, const char *suffix)
{
    size_t a = strlen(text), b = strlen(suffix);
    return a > b && text[a - b - 1] == '_' && !strcmp(text + a - b, suffix);
}

//  Whether word stands in text as whole _-separated tokens.
static bool s_has_tokens(const char *text, const char *word)
{
    size_t len = strlen(word);
    for (const char *at = strstr(text, word); at; at = strstr(at + 1, word)) {
        if ((at == text || at[-1] == '_') && (at[len] == 0 || at[len] == '_')) {
            return true;
        }
    }
    return false;
}

static void s_suffix(char *out, size_t size, const char *word)
{
    if (word && *word && !s_has_tokens(out, word) && strlen(out) + strlen(word) + 2 < size) {
        strcat(out, "_");
        strcat(out, word);
    }
}

//  The length of a unit's part without its {annotations}.
static size_t s_bare(const char *part, size_t len)
{
    const char *brace = memchr(part, '{', len);
    return brace ? (size_t)(brace - part) : len;
}

//  The unit's word: "seconds", "bytes_per_second", "" for an annotation.
static void s_unit_word(const char *unit, size_t len, bool gauge, char *out, size_t size)
{
    out[0] = 0;
    const char *slash = memchr(unit, '/', len);
    size_t head = s_bare(unit, slash ? (size_t)(slash - unit) : len);
    if (head == 1 && unit[0] == '1' && !slash) {
        snprintf(out, size, "%s", gauge ? "ratio" : "");
        return;
    }
    const char *word = s_lookup(s_units, sizeof s_units / sizeof s_units[0], unit, head);
    if (word) {
        snprintf(out, size, "%s", word);
    } else {
        s_append(out, size, unit, head);
    }
    size_t plen = slash ? s_bare(slash + 1, len - (size_t)(slash + 1 - unit)) : 0;
    if (plen > 0) {
        const char *per = slash + 1;
        const char *per_word = s_lookup(s_per, sizeof s_per / sizeof s_per[0], per, plen);
        size_t at = strlen(out);
        snprintf(out + at, size - at, "%sper_", at ? "_" : "");
        if (per_word) {
            at = strlen(out);
            snprintf(out + at, size - at, "%s", per_word);
        } else {
            s_append(out, size, per, plen);
        }
    }
    while (strlen(out) > 0 && out[strlen(out) - 1] == '_') {
        out[strlen(out) - 1] = 0;
    }
}

void drv_prom_metric_name(const char *name, size_t len, const char *unit, size_t ulen, bool counter, bool gauge,
                          char *out, size_t size)
{
    out[0] = 0;
    if (len > 0 && name[0] >= '0' && name[0] <= '9') {
        snprintf(out, size, "_");
    }
    s_append(out, size, name, len);
    if (counter && s_ends(out, "total")) {
        out[strlen(out) - 6] = 0; // _total goes last, after the unit
    }
    char word[128];
    s_unit_word(unit ? unit : "", unit ? ulen : 0, gauge, word, sizeof word);
    s_suffix(out, size, word);
    if (counter) {
        s_suffix(out, size, "total");
    }
}

void drv_prom_label_name(const char *key, size_t len, char *out, size_t size)
{
    out[0] = 0;
    if (len > 0 && key[0] >= '0' && key[0] <= '9') {
        snprintf(out, size, "key_");
    }
    size_t at = strlen(out);
    for (size_t i = 0; i < len && at + 1 < size; i++) {
        char c = key[i];
        bool valid = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        out[at++] = valid ? c : '_';
    }
    out[at] = 0;
}

void drv_prom_float_text(double value, char *out, size_t size)
{
    if (isnan(value)) {
        snprintf(out, size, "NaN");
    } else if (isinf(value)) {
        snprintf(out, size, value > 0 ? "+Inf" : "-Inf");
    } else {
        //  As Go's strconv.FormatFloat(v, 'g', -1, 64), which Prometheus
        //  clients use: the fewest digits that read back the same, plain
        //  unless the exponent is under -4 or 6 and over.
        int digits = 1;
        char probe[64];
        while (digits < 17) {
            snprintf(probe, sizeof probe, "%.*e", digits - 1, value);
            if (strtod(probe, NULL) == value) {
                break;
            }
            digits++;
        }
        snprintf(probe, sizeof probe, "%.*e", digits - 1, value);
        int exponent = atoi(strchr(probe, 'e') + 1);
        if (exponent < -4 || exponent >= 6) {
            snprintf(out, size, "%s", probe);
        } else {
            int decimals = digits - 1 - exponent;
            snprintf(out, size, "%.*f", decimals > 0 ? decimals : 0, value);
        }
    }
}
