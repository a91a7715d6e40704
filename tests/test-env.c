/* Strict parsing of numbers and sizes from the environment (lib/env.c). */
#include "config.h"

#include <stdlib.h>

#include "env.h"
#include "gpumem/status.h"
#include "tap.h"

int main(void)
{
    plan(24);
    long v = 0;
    ok(gm_parse_long("42", &v) && v == 42, "a decimal");
    ok(gm_parse_long("  7\t\n", &v) && v == 7, "surrounding white space");
    ok(gm_parse_long("-3", &v) && v == -3, "a sign");
    ok(!gm_parse_long("", &v), "empty is not a number");
    ok(!gm_parse_long("  ", &v), "blank is not a number");
    ok(!gm_parse_long("1x", &v), "trailing junk");
    ok(!gm_parse_long("1 2", &v), "two numbers");
    ok(!gm_parse_long("99999999999999999999999", &v), "overflow");

    uint64_t s = 0;
    ok(gm_parse_size("4096", &s) && s == 4096, "bytes");
    ok(gm_parse_size("512M", &s) && s == 512ull << 20, "512M");
    ok(gm_parse_size("2GiB", &s) && s == 2ull << 30, "2GiB");
    ok(gm_parse_size("1gb", &s) && s == 1ull << 30, "1gb, any case");
    ok(gm_parse_size(" 3k ", &s) && s == 3072, "white space and k");
    ok(gm_parse_size("1T", &s) && s == 1ull << 40, "1T");
    ok(!gm_parse_size("-1M", &s), "negative sizes");
    ok(!gm_parse_size("12Q", &s), "an unknown suffix");
    ok(!gm_parse_size("17179869184T", &s), "overflow by the suffix");

    double d = 0;
    ok(gm_parse_double("0.2", &d) && d == 0.2, "a fraction");
    ok(!gm_parse_double("nan", &d), "nan is refused");

    unsetenv("GPUMEM_TEST_X");
    bool set = true;
    ok(gm_env_long("GPUMEM_TEST_X", 0, 10, 5, &v, &set) == GPUMEM_OK && v == 5 && !set, "unset gives the default");
    setenv("GPUMEM_TEST_X", "", 1);
    ok(gm_env_long("GPUMEM_TEST_X", 0, 10, 5, &v, &set) == GPUMEM_OK && v == 5 && !set, "empty counts as unset");
    setenv("GPUMEM_TEST_X", "11", 1);
    is_int(gm_env_long("GPUMEM_TEST_X", 0, 10, 5, &v, NULL), GPUMEM_ERROR_INVALID_ENVIRONMENT,
           "out of range is an error, not the default");
    like(gpumem_last_error(), "GPUMEM_TEST_X='11'", "the message names the variable and value");
    setenv("GPUMEM_TEST_X", "lots", 1);
    is_int(gm_env_size("GPUMEM_TEST_X", 1, 9, &s), GPUMEM_ERROR_INVALID_ENVIRONMENT, "a bad size is an error");
    return exit_status();
}
