/* Strict parsing of numbers, sizes and words from the environment
 * (lib/env.c), and the word-valued variables read as doc/environment.md
 * says: blanks around a value and around each part of it, any case. */
#include "config.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "child.h"
#include "devfile.h"
#include "driver.h"
#include "env.h"
#include "error.h"
#include "gpumem/status.h"
#include "tap.h"

/* A word-valued variable, set in a child on the simulator: its name and
 * value, and a second variable (NULL: none). */
typedef struct word_case {
    const char *name, *value, *name2, *value2;
} word_case;

static void set_case(const word_case *c)
{
    setenv("GPUMEM_BACKEND", "sim", 1);
    setenv(c->name, c->value, 1);
    if (c->name2 != NULL)
        setenv(c->name2, c->value2, 1);
}

/* value[0]: the backend is the simulator; [1], [2]: device 0's compute
 * capability; [3]: device 0 can access device 1. */
static void backend_case(const void *arg, child_result *out)
{
    set_case(arg);
    const char *name = NULL;
    out->status = gpumem_backend(&name);
    snprintf(out->text, sizeof out->text, "%s", out->status == GPUMEM_OK ? name : gpumem_last_error());
    if (out->status != GPUMEM_OK)
        return;
    int major = 0, minor = 0, can = -1, n = 0;
    out->value[0] = strcmp(name, "sim") == 0;
    gpumem_device_compute_capability(0, &major, &minor);
    out->value[1] = major;
    out->value[2] = minor;
    if (gpumem_device_count(&n) == GPUMEM_OK && n > 1)
        gpumem_peer_can_access(0, 1, &can);
    out->value[3] = can;
}

/* GPUMEM_ALLOCATOR: value[0] the deferred frees after an array's release
 * (0 on the context's own pool, 1 from the driver). */
static void allocator_case(const void *arg, child_result *out)
{
    set_case(arg);
    gpumem_context *c = NULL;
    out->status = gpumem_context_create(0, &c);
    snprintf(out->text, sizeof out->text, "%s", gpumem_last_error());
    if (out->status != GPUMEM_OK)
        return;
    int64_t n = 100;
    gpumem_array *x = NULL;
    size_t pending = 99;
    gpumem_device_array(c, 1, &n, NULL, gpumem_dtype_builtin(GPUMEM_UINT8), 'C', NULL, &x);
    gpumem_array_release(x);
    gpumem_context_pending_deallocations(c, &pending, NULL);
    out->value[0] = (long)pending;
    gpumem_context_release(c);
}

static void words(void)
{
    ok(gm_word_is("sim", "sim") && gm_word_is(" sim\t", "sim") && gm_word_is("\t SIM  ", "sim") &&
           gm_word_is("Sim", "sim"),
       "a word: blanks around it, any case");
    ok(!gm_word_is("si m", "sim") && !gm_word_is("sim\n", "sim") && !gm_word_is("simx", "sim") &&
           !gm_word_is("sm", "sim") && !gm_word_is("", "sim") && !gm_word_is("  ", "sim") && !gm_word_is(NULL, "sim"),
       "not a word: a blank inside, a newline, more or less of it, nothing");
    ok(gm_word_is("cuda_error_out_of_memory", "CUDA_ERROR_OUT_OF_MEMORY"), "case folding is ASCII: I and i match");

    child_result r;
    static const word_case backend[] = {{"GPUMEM_BACKEND", " sim\t", NULL, NULL},
                                        {"GPUMEM_BACKEND", "SIM", NULL, NULL}};
    for (size_t i = 0; i < sizeof backend / sizeof backend[0]; i++) {
        run_child(backend_case, &backend[i], &r);
        ok(r.status == GPUMEM_OK && r.value[0] == 1, "GPUMEM_BACKEND='%s' is the simulator (%s)", backend[i].value,
           r.text);
    }
    run_child(backend_case, &(word_case){"GPUMEM_BACKEND", "s im", NULL, NULL}, &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_BACKEND='s im' is refused");
    like(r.text, "GPUMEM_BACKEND='s im'", "naming the variable and its value");

    run_child(backend_case, &(word_case){"GPUMEM_SIM_ARCH", "  sm_80\t", NULL, NULL}, &r);
    ok(r.status == GPUMEM_OK && r.value[1] == 8 && r.value[2] == 0, "GPUMEM_SIM_ARCH=' sm_80 ' is sm_80 (%ld.%ld; %s)",
       r.value[1], r.value[2], r.text);
    run_child(backend_case, &(word_case){"GPUMEM_SIM_ARCH", "SM_86", NULL, NULL}, &r);
    ok(r.status == GPUMEM_OK && r.value[1] == 8 && r.value[2] == 6, "GPUMEM_SIM_ARCH=SM_86 is sm_86");

    run_child(backend_case, &(word_case){"GPUMEM_SIM_PEERS", " none ", "GPUMEM_SIM_DEVICES", "2"}, &r);
    ok(r.status == GPUMEM_OK && r.value[3] == 0, "GPUMEM_SIM_PEERS=' none ': no peers (%ld; %s)", r.value[3], r.text);
    run_child(backend_case, &(word_case){"GPUMEM_SIM_PEERS", "\tALL ", "GPUMEM_SIM_DEVICES", "2"}, &r);
    ok(r.status == GPUMEM_OK && r.value[3] == 1, "GPUMEM_SIM_PEERS=' ALL ': all peers (%ld; %s)", r.value[3], r.text);
    run_child(backend_case, &(word_case){"GPUMEM_SIM_PEERS", " 0 - 1 , 1-2 ", "GPUMEM_SIM_DEVICES", "3"}, &r);
    ok(r.status == GPUMEM_OK && r.value[3] == 1, "GPUMEM_SIM_PEERS=' 0 - 1 , 1-2 ': blanks around each ordinal (%s)",
       r.text);
    run_child(backend_case, &(word_case){"GPUMEM_SIM_PEERS", "0-1 x", "GPUMEM_SIM_DEVICES", "2"}, &r);
    is_int(r.status, GPUMEM_ERROR_INVALID_ENVIRONMENT, "GPUMEM_SIM_PEERS='0-1 x' is refused");

    run_child(allocator_case, &(word_case){"GPUMEM_ALLOCATOR", " pool\t", NULL, NULL}, &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 0, "GPUMEM_ALLOCATOR=' pool ': the context's own pool (%s)", r.text);
    run_child(allocator_case, &(word_case){"GPUMEM_ALLOCATOR", "Driver ", NULL, NULL}, &r);
    ok(r.status == GPUMEM_OK && r.value[0] == 1, "GPUMEM_ALLOCATOR='Driver ': the driver, frees deferred (%s)",
       r.text);

    long k = 0;
    int code = 0;
    const char *bad = NULL;
    ok(gm_parse_sim_fail(" 4:CUDA_ERROR_OUT_OF_MEMORY\t", &k, &code, &bad) && k == 4 && code == 2,
       "GPUMEM_SIM_FAIL=' 4:CUDA_ERROR_OUT_OF_MEMORY ': blanks around the value");
    ok(gm_parse_sim_fail("4 : cuda_error_out_of_memory", &k, &code, &bad) && k == 4 && code == 2,
       "GPUMEM_SIM_FAIL='4 : cuda_error_out_of_memory': blanks around each part, any case");
    ok(gm_parse_sim_fail("5: 700 ", &k, &code, &bad) && k == 5 && code == 700, "GPUMEM_SIM_FAIL='5: 700 '");
}


/* The parsers' ranges (the table's reads are tests/test-params.c's). */
static void test_params(void)
{
    uint64_t u = 0;
    setenv("GPUMEM_TEST_PARAM_SIZE", "", 1);
    ok(gm_env_size_range("GPUMEM_TEST_PARAM_SIZE", 1, 8, 5, &u) == GPUMEM_OK && u == 5,
       "gm_env_size_range: empty is unset");
    setenv("GPUMEM_TEST_PARAM_SIZE", "9", 1);
    is_int(gm_env_size_range("GPUMEM_TEST_PARAM_SIZE", 1, 8, 5, &u), GPUMEM_ERROR_INVALID_ENVIRONMENT,
           "gm_env_size_range: above the maximum");
}

int main(void)
{
    plan(86 + 18 + 2 + 9);
    words(); /* first: its children must fork before this process uses the library */
    long v = 0;
    ok(gm_parse_long("42", &v) && v == 42, "a decimal");
    ok(gm_parse_long("  7\t", &v) && v == 7, "surrounding blanks");
    ok(!gm_parse_long("7\n", &v), "a newline is not a blank");
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

    /* The grammar of env.c, case by case (doc/environment.md). */
    ok(!gm_parse_long("+0", &v), "integers: no '+'");
    ok(!gm_parse_long("-0", &v), "integers: no -0");
    ok(!gm_parse_long("007", &v), "integers: no leading zeros");
    ok(gm_parse_long("0", &v) && v == 0, "integers: 0");
    ok(!gm_parse_long("0x10", &v), "integers: no hex");
    ok(!gm_parse_long("1\r", &v), "integers: no carriage return");
    ok(!gm_parse_long("\v1", &v), "integers: no vertical tab");
    ok(gm_parse_long("-9223372036854775808", &v) && v == LONG_MIN, "integers: LONG_MIN");
    ok(!gm_parse_long("9223372036854775808", &v), "integers: LONG_MAX + 1");
    ok(!gm_parse_size("+1", &s), "sizes: no sign");
    ok(!gm_parse_size("01K", &s), "sizes: no leading zeros");
    ok(gm_parse_size("0", &s) && s == 0, "sizes: 0");
    ok(gm_parse_size("7B", &s) && s == 7, "sizes: a B suffix");
    ok(!gm_parse_size("1 K", &s), "sizes: no blank before the suffix");
    ok(!gm_parse_size("1KiBx", &s), "sizes: junk after the suffix");
    ok(!gm_parse_size("18446744073709551616", &s), "sizes: past UINT64_MAX");
    ok(gm_parse_double("1e-3", &d) && d == 1e-3, "numbers: an exponent");
    ok(gm_parse_double(".5", &d) && d == 0.5, "numbers: .5");
    ok(gm_parse_double("5.", &d) && d == 5.0, "numbers: 5.");
    ok(gm_parse_double("-1", &d) && d == -1.0, "numbers: a minus sign");
    ok(gm_parse_double("-0", &d) && d == 0.0 && !signbit(d), "numbers: -0 is 0");
    ok(gm_parse_double("1e-400", &d) && d == 0.0, "numbers: an underflow is 0");
    ok(!gm_parse_double("1e400", &d), "numbers: an overflow is refused");
    ok(!gm_parse_double("0x1p-2", &d), "numbers: no hex floats");
    ok(!gm_parse_double("+0.5", &d), "numbers: no '+'");
    ok(!gm_parse_double("inf", &d), "numbers: no inf");
    ok(!gm_parse_double(".", &d), "numbers: a lone point");
    ok(!gm_parse_double("1e", &d), "numbers: an empty exponent");
    ok(!gm_parse_double("1e+", &d), "numbers: an exponent without digits");
    ok(!gm_parse_double("0.5 0", &d), "numbers: two numbers");
    ok(gm_parse_double(" 0.25\t", &d) && d == 0.25, "numbers: blanks around");

    /* CUDA_DEVICE and ~/.cuda-device, as pure parsers */
    int dev = -7;
    is_int(gm_parse_cuda_device("3", &dev), GPUMEM_OK, "CUDA_DEVICE=3");
    is_int(dev, 3, "is device 3");
    is_int(gm_parse_cuda_device("+0", &dev), GPUMEM_ERROR_INVALID_ENVIRONMENT, "CUDA_DEVICE=+0 is refused");
    is_int(gm_parse_cuda_device("-0", &dev), GPUMEM_ERROR_INVALID_ENVIRONMENT, "CUDA_DEVICE=-0 is refused");
    is_int(gm_parse_cuda_device("01", &dev), GPUMEM_ERROR_INVALID_ENVIRONMENT, "CUDA_DEVICE=01 is refused");
    like(gpumem_last_error(), "leading zeros", "saying why");
    is_int(gm_parse_cuda_device("-2", &dev), GPUMEM_ERROR_INVALID_ENVIRONMENT, "CUDA_DEVICE=-2 is refused");
    like(gpumem_last_error(), "negative", "as negative");
    is_int(gm_parse_cuda_device("2147483648", &dev), GPUMEM_ERROR_INVALID_DEVICE, "above INT_MAX: no such device");
    is_int(gm_parse_cuda_device("99999999999999999999999", &dev), GPUMEM_ERROR_INVALID_DEVICE,
           "far above INT_MAX: no such device");
    is_int(gm_parse_cuda_device("1\x01", &dev), GPUMEM_ERROR_INVALID_ENVIRONMENT, "a control byte");
    like(gpumem_last_error(), "CUDA_DEVICE='1\\x01'", "is shown escaped");
    is_int(dev, 3, "failures leave the device alone");
    char line[200];
    memset(line, ' ', sizeof line);
    line[0] = '1';
    memcpy(line + 100, "junk", 4);
    is_int(gm_parse_device_file("/h/.cuda-device", line, sizeof line, false, &dev),
           GPUMEM_ERROR_INVALID_ENVIRONMENT, "a first line of 200 bytes is refused");
    like(gpumem_last_error(), "longer than 64 bytes", "naming the limit");
    is_int(gm_parse_device_file("/h/.cuda-device", "1\0garbage\n", 10, false, &dev),
           GPUMEM_ERROR_INVALID_ENVIRONMENT, "a NUL in the first line is refused");
    like(gpumem_last_error(), "first line '1\\x00garbage'", "and shown");
    is_int(gm_parse_device_file("/h/.cuda-device", "1\r2\n", 4, false, &dev), GPUMEM_ERROR_INVALID_ENVIRONMENT,
           "a carriage return is refused");
    is_int(gm_parse_device_file("/h/.cuda-device", "1\r\n", 3, false, &dev), GPUMEM_ERROR_INVALID_ENVIRONMENT,
           "so are DOS line ends");
    is_int(gm_parse_device_file("/h/.cuda-device", "0000000000000000000000000000000000000000000000000000000019\n",
                                59, false, &dev), GPUMEM_ERROR_INVALID_ENVIRONMENT, "leading zeros are refused");
    is_int(gm_parse_device_file("/h/.cuda-device", " 2 \nnext", 8, false, &dev), GPUMEM_OK,
           "the first line is read");
    is_int(dev, 2, "as device 2");
    is_int(gm_parse_device_file("/h/.cuda-device", "1", 1, true, &dev), GPUMEM_ERROR_INVALID_ENVIRONMENT,
           "a line that goes on past what was read is too long");

    /* GPUMEM_SIM_FAIL */
    long k = 0;
    int code = 0;
    const char *bad = NULL;
    ok(gm_parse_sim_fail("12:CUDA_ERROR_OUT_OF_MEMORY", &k, &code, &bad) && k == 12 && code == 2,
       "GPUMEM_SIM_FAIL=12:CUDA_ERROR_OUT_OF_MEMORY");
    ok(gm_parse_sim_fail("3", &k, &code, &bad) && k == 3 && code == 999, "GPUMEM_SIM_FAIL=3: CUDA_ERROR_UNKNOWN");
    char longv[260];
    memset(longv, ' ', sizeof longv);
    longv[0] = '1';
    memcpy(longv + 250, ":junk", 6);
    ok(!gm_parse_sim_fail(longv, &k, &code, &bad) && bad != NULL && strcmp(bad, "junk") == 0,
       "GPUMEM_SIM_FAIL='1<249 spaces>:junk' is refused for its ERROR");
    longv[250] = 'x';
    ok(!gm_parse_sim_fail(longv, &k, &code, &bad) && bad == NULL, "and '1<249 spaces>xjunk' for its k");
    ok(!gm_parse_sim_fail("0", &k, &code, &bad), "k 0 is refused");
    ok(!gm_parse_sim_fail("1:0", &k, &code, &bad), "ERROR 0 is refused");
    ok(!gm_parse_sim_fail("1:CUDA_SUCCESS", &k, &code, &bad), "CUDA_SUCCESS is refused");

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
    test_params();

    /* GPUMEM_DEBUG: a list of words; unknown ones are the messages, as every non-zero value was */
    ok(gm_debug_parse(NULL) == 0 && gm_debug_parse("0") == 0 && gm_debug_parse(" 0\t") == 0,
       "GPUMEM_DEBUG unset or 0: nothing");
    ok(gm_debug_parse("1") == GM_DEBUG_MESSAGES && gm_debug_parse("yes") == GM_DEBUG_MESSAGES &&
           gm_debug_parse("-0") == GM_DEBUG_MESSAGES && gm_debug_parse("00") == GM_DEBUG_MESSAGES &&
           gm_debug_parse("poisons") == GM_DEBUG_MESSAGES,
       "any other word is the messages (1, yes, -0, 00, poisons)");
    ok(gm_debug_parse("leaks") == GM_DEBUG_LEAKS && gm_debug_parse("poison") == GM_DEBUG_POISON &&
           gm_debug_parse("copies") == GM_DEBUG_COPIES,
       "leaks, poison and copies alone: only their own part");
    is_int(gm_debug_parse(" Poison , COPIES\t,leaks"), GM_DEBUG_POISON | GM_DEBUG_COPIES | GM_DEBUG_LEAKS,
           "a list: any case, blanks around each word");
    is_int(gm_debug_parse("1,leaks"), GM_DEBUG_MESSAGES | GM_DEBUG_LEAKS, "1,leaks: both, as before");
    is_int(gm_debug_parse("0,poison"), GM_DEBUG_POISON, "0,poison: poison only");
    is_int(gm_debug_parse("poison,,copies,"), GM_DEBUG_POISON | GM_DEBUG_COPIES, "empty words do nothing");
    is_int(gm_debug_parse("poison copies"), GM_DEBUG_MESSAGES, "words are separated by commas, not blanks");
    char longword[100];
    memset(longword, 'x', sizeof longword - 1);
    longword[sizeof longword - 1] = '\0';
    is_int(gm_debug_parse(longword), GM_DEBUG_MESSAGES, "a long word is an unknown one");
    return exit_status();
}
