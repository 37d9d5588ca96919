/*  For unit tests that compare records written as NDJSON: every record a
    receiver took has observed_time_unix_nano (docs/operations.md, "When a
    record was observed"), a time the test cannot know. */
#ifndef TEST_OBSERVED_H
#define TEST_OBSERVED_H

#include <stdbool.h>
#include <string.h>

//  Takes the observed time out of each line of text, in place: false when
//  a line has none (a record left unstamped).
static inline bool test_unobserved(char *text)
{
    static const char key[] = "\"observed_time_unix_nano\":";
    for (char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
        char *at = strstr(line, key);
        char *end = strchr(line, '\n');
        if (!at || (end && at > end)) {
            return false;
        }
        char *past = at + sizeof key - 1;
        while (*past >= '0' && *past <= '9') {
            past++;
        }
        if (*past == ',') {
            past++; // a key follows
        } else if (at > line && at[-1] == ',') {
            at--; // the last key: its comma before goes with it
        }
        memmove(at, past, strlen(past) + 1);
    }
    return true;
}

#endif
