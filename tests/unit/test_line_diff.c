/*  drv_line_diff: what a rollout shows of a changed script (issue 35). */
#include "drover/drv_line_diff.h"
#include "drover/drv_spec.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

//  The diff's lines joined by newlines, for comparing whole.
static char *s_joined(json_t *lines)
{
    size_t cap = 1, i;
    json_t *line;
    json_array_foreach(lines, i, line) cap += strlen(json_string_value(line)) + 1;
    char *text = calloc(1, cap);
    json_array_foreach(lines, i, line)
    {
        strcat(text, json_string_value(line));
        strcat(text, "\n");
    }
    return text;
}

static void s_expect(const char *before, const char *after, size_t max, const char *expected)
{
    json_t *lines = drv_line_diff(before, after, max);
    char *text = s_joined(lines);
    assert_string_equal(text, expected);
    free(text);
    json_decref(lines);
}

static void test_one_line_changed_in_the_middle_with_two_of_context(void **state)
{
    (void)state;
    s_expect("a\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nD\ne\nf\ng\n", 100, "@@ -2,5 +2,5 @@\n b\n c\n-d\n+D\n e\n f\n");
}

static void test_added_removed_and_far_apart_changes_make_two_hunks(void **state)
{
    (void)state;
    s_expect("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "0\n1\n2\n3\n4\n5\n6\n7\n8\n10\n", 100,
             "@@ -1,2 +1,3 @@\n+0\n 1\n 2\n@@ -7,4 +8,3 @@\n 7\n 8\n-9\n 10\n");
    s_expect("", "x\ny", 100, "@@ -0,0 +1,2 @@\n+x\n+y\n");
    s_expect("same\n", "same\n", 100, "");
}

static void test_long_diffs_are_cut_and_say_how_much(void **state)
{
    (void)state;
    s_expect("a\nb\nc\nd\n", "w\nx\ny\nz\n", 3, "@@ -1,4 +1,4 @@\n-a\n-b\n(6 more lines)\n");
}

//  A script changed in a spec shows as a line diff beside its size.
static void test_spec_changes_carry_a_scripts_line_diff(void **state)
{
    (void)state;
    json_t *before = json_pack("{s:{s:{s:s, s:s}}}", "nodes", "lua", "script", "local a = 1\nreturn a\n", "type", "x");
    json_t *after = json_pack("{s:{s:{s:s, s:s}}}", "nodes", "lua", "script", "local a = 2\nreturn a\n", "type", "y");
    json_t *changes = drv_spec_diff(before, after, 10);
    assert_int_equal(json_array_size(changes), 2);
    json_t *script = json_array_get(changes, 0);
    assert_string_equal(json_string_value(json_object_get(script, "path")), "nodes.lua.script");
    char *text = s_joined(json_object_get(script, "diff"));
    assert_string_equal(text, "@@ -1,2 +1,2 @@\n-local a = 1\n+local a = 2\n return a\n");
    free(text);
    assert_null(json_object_get(json_array_get(changes, 1), "diff")); // one line: from and to say it
    json_decref(changes);
    json_decref(before);
    json_decref(after);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_line_changed_in_the_middle_with_two_of_context),
        cmocka_unit_test(test_added_removed_and_far_apart_changes_make_two_hunks),
        cmocka_unit_test(test_long_diffs_are_cut_and_say_how_much),
        cmocka_unit_test(test_spec_changes_carry_a_scripts_line_diff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
