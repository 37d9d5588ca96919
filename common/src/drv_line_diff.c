/*  drv_line_diff — a unified line diff of two texts (drv_line_diff.h), for
    showing what a rollout changed in a script. Lines common to both ends
    are set aside first; what is left is matched by longest common
    subsequence while it is small enough, else shown removed then added. */
#include "drover/drv_line_diff.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTEXT 2             // unchanged lines shown around a change
#define MAX_CELLS (512 * 512) // the matching table's size at most

typedef struct {
    const char *at;
    size_t len;
} line_t;

typedef struct {
    char kind; // ' ', '-' or '+'
    size_t a;  // index in the old text's lines (for ' ' and '-')
    size_t b;  // index in the new text's lines (for ' ' and '+')
} op_t;

//  The lines of text; a last line without its newline counts too.
static line_t *s_lines(const char *text, size_t *count)
{
    size_t n = 1;
    for (const char *p = text; *p; p++) {
        n += *p == '\n';
    }
    line_t *lines = calloc(n, sizeof *lines);
    size_t k = 0;
    const char *start = text;
    for (const char *p = text;; p++) {
        if (*p == '\n' || !*p) {
            if (*p || p > start) {
                lines[k++] = (line_t){start, (size_t)(p - start)};
            }
            if (!*p) {
                break;
            }
            start = p + 1;
        }
    }
    *count = k;
    return lines;
}

static bool s_same(line_t x, line_t y)
{
    return x.len == y.len && !memcmp(x.at, y.at, x.len);
}

//  The edit script of a[lo_a, hi_a) into b[lo_b, hi_b), appended to ops.
static void s_middle(const line_t *a, size_t lo_a, size_t hi_a, const line_t *b, size_t lo_b, size_t hi_b, op_t *ops,
                     size_t *count)
{
    size_t n = hi_a - lo_a, m = hi_b - lo_b;
    uint32_t *table = (n + 1) * (m + 1) <= MAX_CELLS ? calloc((n + 1) * (m + 1), sizeof *table) : NULL;
    if (!table) {
        for (size_t i = lo_a; i < hi_a; i++) {
            ops[(*count)++] = (op_t){'-', i, 0};
        }
        for (size_t j = lo_b; j < hi_b; j++) {
            ops[(*count)++] = (op_t){'+', 0, j};
        }
        return;
    }
    //  table[i][j]: the longest common subsequence of a[i..] and b[j..].
    for (size_t i = n; i-- > 0;) {
        for (size_t j = m; j-- > 0;) {
            uint32_t *cell = &table[i * (m + 1) + j];
            if (s_same(a[lo_a + i], b[lo_b + j])) {
                *cell = table[(i + 1) * (m + 1) + j + 1] + 1;
            } else {
                uint32_t down = table[(i + 1) * (m + 1) + j], right = table[i * (m + 1) + j + 1];
                *cell = down >= right ? down : right;
            }
        }
    }
    size_t i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && s_same(a[lo_a + i], b[lo_b + j])) {
            ops[(*count)++] = (op_t){' ', lo_a + i++, lo_b + j++};
        } else if (i < n && (j == m || table[(i + 1) * (m + 1) + j] >= table[i * (m + 1) + j + 1])) {
            ops[(*count)++] = (op_t){'-', lo_a + i++, 0}; // what goes first, then what comes
        } else {
            ops[(*count)++] = (op_t){'+', 0, lo_b + j++};
        }
    }
    free(table);
}

static void s_append(json_t *out, size_t max_lines, size_t *dropped, const char *text)
{
    if (json_array_size(out) < max_lines) {
        json_array_append_new(out, json_string(text));
    } else {
        (*dropped)++;
    }
}

json_t *drv_line_diff(const char *before, const char *after, size_t max_lines)
{
    size_t na, nb;
    line_t *a = s_lines(before, &na), *b = s_lines(after, &nb);
    op_t *ops = calloc(na + nb + 1, sizeof *ops);
    size_t count = 0, head = 0, tail = 0;
    while (head < na && head < nb && s_same(a[head], b[head])) {
        head++;
    }
    while (tail < na - head && tail < nb - head && s_same(a[na - 1 - tail], b[nb - 1 - tail])) {
        tail++;
    }
    for (size_t k = 0; k < head; k++) {
        ops[count++] = (op_t){' ', k, k};
    }
    s_middle(a, head, na - tail, b, head, nb - tail, ops, &count);
    for (size_t k = tail; k > 0; k--) {
        ops[count++] = (op_t){' ', na - k, nb - k};
    }
    //  Hunks: each change with CONTEXT unchanged lines around it.
    json_t *out = json_array();
    size_t dropped = 0;
    for (size_t k = 0; k < count;) {
        if (ops[k].kind == ' ') {
            k++;
            continue;
        }
        //  This change and those after it separated by at most 2 * CONTEXT
        //  unchanged lines make one hunk.
        size_t last = k, q = k + 1;
        while (q < count) {
            size_t r = q;
            while (r < count && ops[r].kind == ' ') {
                r++;
            }
            if (r == count || r - q > 2 * CONTEXT) {
                break;
            }
            last = r;
            q = r + 1;
        }
        size_t start = k > CONTEXT ? k - CONTEXT : 0;
        size_t end = last + 1 + CONTEXT < count ? last + 1 + CONTEXT : count;
        size_t a_first = 0, b_first = 0, a_len = 0, b_len = 0;
        bool a_seen = false, b_seen = false;
        for (size_t q = start; q < end; q++) {
            if (ops[q].kind != '+') {
                a_first = a_seen ? a_first : ops[q].a;
                a_seen = true;
                a_len++;
            }
            if (ops[q].kind != '-') {
                b_first = b_seen ? b_first : ops[q].b;
                b_seen = true;
                b_len++;
            }
        }
        char header[96];
        snprintf(header, sizeof header, "@@ -%zu,%zu +%zu,%zu @@", a_seen ? a_first + 1 : 0, a_len,
                 b_seen ? b_first + 1 : 0, b_len);
        s_append(out, max_lines, &dropped, header);
        for (size_t q = start; q < end; q++) {
            const line_t *line = ops[q].kind == '+' ? &b[ops[q].b] : &a[ops[q].a];
            char *text = malloc(line->len + 2);
            text[0] = ops[q].kind;
            memcpy(text + 1, line->at, line->len);
            text[line->len + 1] = '\0';
            s_append(out, max_lines, &dropped, text);
            free(text);
        }
        k = end;
    }
    if (dropped > 0) {
        char more[64];
        snprintf(more, sizeof more, "(%zu more lines)", dropped);
        json_array_append_new(out, json_string(more));
    }
    free(ops);
    free(a);
    free(b);
    return out;
}
