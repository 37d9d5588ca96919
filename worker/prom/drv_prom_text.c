/*  drv_prom_text — see drv_prom_text.h. One pass over the lines; names,
    label names and values are ended with NUL where they stand (a label
    value unescaped in place: it only shrinks), so a sample's strings point
    into the text. */
#include "drv_prom_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAMILIES_MAX 65536

typedef struct {
    const char *name, *help, *unit;
    drv_prom_type_t type;
} family_t;

typedef struct {
    family_t *families;
    size_t count, cap;
    bool openmetrics;
    size_t line;
    char *err;
    size_t errlen;
} parser_t;

static bool s_fail(parser_t *p, const char *what)
{
    snprintf(p->err, p->errlen, "line %zu: %s", p->line, what);
    return false;
}

static bool s_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool s_name_char(char c)
{
    return s_name_start(c) || (c >= '0' && c <= '9');
}

static family_t *s_family(parser_t *p, const char *name, bool create)
{
    for (size_t i = p->count; i-- > 0;) { // the one just declared first: TYPE precedes its samples
        if (!strcmp(p->families[i].name, name)) {
            return &p->families[i];
        }
    }
    if (!create || p->count >= FAMILIES_MAX) {
        return NULL;
    }
    if (p->count == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        family_t *grown = realloc(p->families, cap * sizeof *grown);
        if (!grown) {
            return NULL;
        }
        p->families = grown;
        p->cap = cap;
    }
    p->families[p->count] = (family_t){name, "", "", DRV_PROM_UNTYPED};
    return &p->families[p->count++];
}

static drv_prom_type_t s_type(const char *text)
{
    static const char *const names[] = {"untyped", "counter", "gauge",    "histogram",
                                        "summary", "info",    "stateset", "gaugehistogram"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!strcmp(text, names[i])) {
            return (drv_prom_type_t)i;
        }
    }
    return !strcmp(text, "unknown") ? DRV_PROM_UNTYPED : (drv_prom_type_t)-1;
}

//  "# HELP name text", "# TYPE name type", "# UNIT name unit": the family's.
static bool s_comment(parser_t *p, char *line, bool *eof)
{
    char *at = line + 1 + strspn(line + 1, " ");
    if (!strcmp(at, "EOF")) {
        *eof = true;
        return true;
    }
    bool help = !strncmp(at, "HELP ", 5), type = !strncmp(at, "TYPE ", 5), unit = !strncmp(at, "UNIT ", 5);
    if (!help && !type && !unit) {
        return true; // another comment
    }
    char *name = at + 5 + strspn(at + 5, " ");
    char *end = name;
    while (s_name_char(*end)) {
        end++;
    }
    if (end == name || !s_name_start(*name) || (*end && *end != ' ')) {
        return s_fail(p, "a HELP, TYPE or UNIT line without a metric name");
    }
    char *rest = *end ? end + 1 + strspn(end + 1, " ") : end;
    *end = 0;
    family_t *family = s_family(p, name, true);
    if (!family) {
        return s_fail(p, "too many metric families");
    }
    if (help) {
        family->help = rest;
    } else if (unit) {
        family->unit = rest;
    } else {
        drv_prom_type_t t = s_type(rest);
        if ((int)t < 0) {
            return s_fail(p, "an unknown TYPE");
        }
        family->type = t;
    }
    return true;
}

//  A label value in quotes at *at (past the quote), unescaped in place and ended with NUL; *at moves past it.
static bool s_label_value(parser_t *p, char **at)
{
    char *in = *at, *out = *at;
    while (*in && *in != '"') {
        if (*in == '\\') {
            in++;
            if (*in == 'n') {
                *out++ = '\n';
            } else if (*in == '\\' || *in == '"') {
                *out++ = *in;
            } else {
                return s_fail(p, "a label value with an unknown escape");
            }
            in++;
        } else {
            *out++ = *in++;
        }
    }
    if (*in != '"') {
        return s_fail(p, "a label value without its closing quote");
    }
    *out = 0; // out <= in: the quote's place at the latest
    *at = in + 1;
    return true;
}

static bool s_labels(parser_t *p, char **at, drv_prom_label_t *labels, size_t *count)
{
    char *c = *at + 1; // past {
    *count = 0;
    for (;;) {
        c += strspn(c, " ");
        if (*c == '}') {
            *at = c + 1;
            return true;
        }
        if (*count == DRV_PROM_TEXT_LABELS_MAX) {
            return s_fail(p, "more than 128 labels");
        }
        char *name = c;
        if (!s_name_start(*c) || *c == ':') {
            return s_fail(p, "a label name that is not [a-zA-Z_][a-zA-Z0-9_]*");
        }
        while (s_name_char(*c) && *c != ':') {
            c++;
        }
        char *name_end = c;
        c += strspn(c, " ");
        if (*c != '=' || c[1 + strspn(c + 1, " ")] != '"') {
            return s_fail(p, "a label without =\"value\"");
        }
        *name_end = 0;
        c += 1 + strspn(c + 1, " ") + 1;
        char *value = c;
        if (!s_label_value(p, &c)) {
            return false;
        }
        for (size_t i = 0; i < *count; i++) {
            if (!strcmp(labels[i].name, name)) {
                return s_fail(p, "a label name twice in one sample"); // as Prometheus refuses it
            }
        }
        labels[(*count)++] = (drv_prom_label_t){name, value};
        c += strspn(c, " ");
        if (*c == ',') {
            c++;
        } else if (*c != '}') {
            return s_fail(p, "labels not separated by ,");
        }
    }
}

static bool s_number(const char *text, double *out)
{
    if (!strcmp(text, "NaN")) {
        *out = NAN;
    } else if (!strcmp(text, "+Inf") || !strcmp(text, "Inf")) {
        *out = INFINITY;
    } else if (!strcmp(text, "-Inf")) {
        *out = -INFINITY;
    } else {
        char *end;
        *out = strtod(text, &end);
        return end != text && *end == 0 && !isnan(*out) && !isinf(*out); // NaN, Inf only as spelled above
    }
    return true;
}

//  The family a sample name belongs to: its own, or the one it is a part of.
static family_t *s_family_of(parser_t *p, const char *name)
{
    family_t *own = s_family(p, name, false);
    if (own) {
        return own;
    }
    static const char *const suffixes[] = {"_total",   "_bucket", "_count", "_sum",
                                           "_created", "_gcount", "_gsum",  "_info"};
    size_t len = strlen(name);
    char base[1024];
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t s = strlen(suffixes[i]);
        if (len > s && len - s < sizeof base && !strcmp(name + len - s, suffixes[i])) {
            memcpy(base, name, len - s);
            base[len - s] = 0;
            family_t *f = s_family(p, base, false);
            if (f) {
                return f;
            }
        }
    }
    return NULL;
}

static bool s_sample(parser_t *p, char *line, drv_prom_sample_fn *fn, void *arg)
{
    drv_prom_label_t labels[DRV_PROM_TEXT_LABELS_MAX];
    size_t count = 0;
    char *c = line;
    if (!s_name_start(*c)) {
        return s_fail(p, "a sample that does not start with a metric name");
    }
    while (s_name_char(*c)) {
        c++;
    }
    char *name_end = c;
    if (*c == '{' && !s_labels(p, &c, labels, &count)) {
        return false;
    }
    if (*c != ' ') {
        return s_fail(p, "a sample without a value");
    }
    c++; // past the space before ending the name (without labels, the name ends there)
    *name_end = 0;
    c += strspn(c, " ");
    char *value = c;
    c += strcspn(c, " ");
    char *ts = *c ? c + 1 + strspn(c + 1, " ") : c;
    *c = 0;
    if (p->openmetrics) { // an exemplar (" # {...} v [t]") is not carried
        char *hash = strstr(ts, "#");
        if (hash) {
            *hash = 0;
        }
    }
    char *ts_end = ts + strcspn(ts, " ");
    if (*ts_end && ts_end[strspn(ts_end, " ")]) {
        return s_fail(p, "something after the timestamp");
    }
    *ts_end = 0;
    drv_prom_sample_t sample = {.name = line, .labels = labels, .label_count = count, .timestamp_ms = -1};
    if (!s_number(value, &sample.value)) {
        return s_fail(p, "a value that is not a number");
    }
    if (*ts) {
        double t;
        if (!s_number(ts, &t) || !(t >= 0 && t <= (p->openmetrics ? 1e10 : 1e13))) { // NaN, Inf, after 2286: no
            return s_fail(p, "a timestamp that is not a number of the time");
        }
        sample.timestamp_ms = p->openmetrics ? (int64_t)(t * 1000.0) : (int64_t)t; // OpenMetrics: seconds
    }
    family_t *family = s_family_of(p, line);
    sample.family = family ? family->name : line;
    sample.type = family ? family->type : DRV_PROM_UNTYPED;
    sample.help = family ? family->help : "";
    sample.unit = family ? family->unit : "";
    fn(arg, &sample);
    return true;
}

int drv_prom_text_parse(char *text, size_t len, bool openmetrics, size_t max_samples, drv_prom_sample_fn *fn, void *arg,
                        char *err, size_t errlen)
{
    parser_t p = {.openmetrics = openmetrics, .err = err, .errlen = errlen};
    int samples = 0;
    bool ok = true, eof = false;
    char *end = text + len;
    for (char *line = text; ok && !eof && line < end;) {
        char *next = memchr(line, '\n', (size_t)(end - line));
        size_t length = next ? (size_t)(next - line) : (size_t)(end - line);
        p.line++;
        if (length > DRV_PROM_TEXT_LINE_MAX) {
            ok = s_fail(&p, "a line over 65536 bytes");
            break;
        }
        if (memchr(line, 0, length)) {
            ok = s_fail(&p, "a NUL byte");
            break;
        }
        line[length] = 0;
        if (length > 0 && line[length - 1] == '\r') {
            line[length - 1] = 0;
        }
        if (line[0] == '#') {
            ok = s_comment(&p, line, &eof);
        } else if (line[strspn(line, " \t")]) {
            if ((size_t)samples >= max_samples) {
                snprintf(err, errlen, "line %zu: more than %zu samples (sample_limit)", p.line, max_samples);
                ok = false;
            } else {
                ok = s_sample(&p, line + strspn(line, " \t"), fn, arg);
                samples += ok;
            }
        }
        line = next ? next + 1 : end;
    }
    free(p.families);
    return ok ? samples : -1;
}
