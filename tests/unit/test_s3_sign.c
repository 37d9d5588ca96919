/*  drv_s3_sign against the examples of AWS's "Signature Calculations for
    the Authorization Header" for S3 (the same credentials, dates and
    requests; the signatures AWS prints), and the URI encoding a key with
    `=` and spaces needs. */
#include "drv_s3_sign.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static const drv_s3_credentials_t s_aws = {
    .access_key_id = "AKIAIOSFODNN7EXAMPLE",
    .secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    .region = "us-east-1",
};

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static void test_get_object(void **state)
{
    (void)state;
    drv_s3_header_t headers[] = {{"host", "examplebucket.s3.amazonaws.com"},
                                 {"range", "bytes=0-9"},
                                 {"x-amz-content-sha256", EMPTY_SHA256},
                                 {"x-amz-date", "20130524T000000Z"}};
    char auth[512];
    assert_int_equal(drv_s3_authorization(&s_aws, "GET", "/test.txt", "", headers, 4, EMPTY_SHA256, "20130524T000000Z",
                                          auth, sizeof auth),
                     0);
    assert_string_equal(auth, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                              "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
                              "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void test_put_object(void **state)
{
    (void)state;
    const char *body = "Welcome to Amazon S3.";
    char hash[DRV_S3_SHA256_HEX];
    drv_s3_sha256_hex(body, strlen(body), hash);
    assert_string_equal(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    drv_buf_t path = {0};
    assert_int_equal(drv_s3_uri_encode("/test$file.text", 15, true, &path), 0);
    assert_int_equal(drv_buf_putc(&path, 0), 0);
    assert_string_equal(path.data, "/test%24file.text");
    //  The headers in any order: the signer sorts them.
    drv_s3_header_t headers[] = {{"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                                 {"host", "examplebucket.s3.amazonaws.com"},
                                 {"date", "Fri, 24 May 2013 00:00:00 GMT"},
                                 {"x-amz-date", "20130524T000000Z"},
                                 {"x-amz-content-sha256", hash}};
    char auth[512];
    assert_int_equal(
        drv_s3_authorization(&s_aws, "PUT", path.data, "", headers, 5, hash, "20130524T000000Z", auth, sizeof auth), 0);
    assert_non_null(strstr(auth, "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"));
    assert_non_null(strstr(auth, "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"));
    drv_buf_free(&path);
}

static void test_list_objects_query(void **state)
{
    (void)state;
    drv_s3_header_t headers[] = {{"host", "examplebucket.s3.amazonaws.com"},
                                 {"x-amz-content-sha256", EMPTY_SHA256},
                                 {"x-amz-date", "20130524T000000Z"}};
    char auth[512];
    assert_int_equal(drv_s3_authorization(&s_aws, "GET", "/", "max-keys=2&prefix=J", headers, 3, EMPTY_SHA256,
                                          "20130524T000000Z", auth, sizeof auth),
                     0);
    assert_non_null(strstr(auth, "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"));
    assert_int_equal(drv_s3_authorization(&s_aws, "GET", "/", "lifecycle=", headers, 3, EMPTY_SHA256,
                                          "20130524T000000Z", auth, sizeof auth),
                     0);
    assert_non_null(strstr(auth, "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"));
}

static void test_keys_are_uri_encoded(void **state)
{
    (void)state;
    drv_buf_t out = {0};
    const char *key = "logs/year=2026/a b+c~d_é.ndjson.gz";
    assert_int_equal(drv_s3_uri_encode(key, strlen(key), true, &out), 0);
    assert_int_equal(drv_buf_putc(&out, 0), 0);
    assert_string_equal(out.data, "logs/year%3D2026/a%20b%2Bc~d_%C3%A9.ndjson.gz");
    out.len = 0;
    assert_int_equal(drv_s3_uri_encode("a/b", 3, false, &out), 0);
    assert_int_equal(drv_buf_putc(&out, 0), 0);
    assert_string_equal(out.data, "a%2Fb");
    drv_buf_free(&out);
    char date[DRV_S3_AMZ_DATE];
    drv_s3_amz_date(1369353600, date);
    assert_string_equal(date, "20130524T000000Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_object),
        cmocka_unit_test(test_put_object),
        cmocka_unit_test(test_list_objects_query),
        cmocka_unit_test(test_keys_are_uri_encoded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
