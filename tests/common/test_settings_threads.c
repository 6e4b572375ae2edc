/*
 * Settings read by threads while another part of the process initialises:
 * libgmux.so's threads, the net library's proxy and the shmem layer all read
 * the process-wide table while a later gmux_comm_init or shmem_init runs
 * com_settings_init_scoped, and a test or the CLI may override a value with
 * com_settings_set. Readers must only ever see the environment's value or
 * an override, never a default in between, and (under TSan) without a data
 * race. Own binary: the first reads must come before any init.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/log.h"
#include "common/settings.h"

#define READERS 2
#define ROUNDS  200

static atomic_int stop;
static atomic_int started;
static atomic_int loaded; /* the first init has returned */

struct seen {
    long reads, wrong_slots, wrong_policy, wrong_timeout, wrong_name;
};

/* Reads three settings as libgmux.so and the net library do, counting any
 * value that neither the environment nor an override gave. */
static void *reader(void *arg)
{
    struct seen *s = arg;
    atomic_fetch_add(&started, 1);
    while (!atomic_load(&stop)) {
        int strict = atomic_load(&loaded);
        int64_t slots = COM_SETTING_INT(NET_RING_SLOTS);
        const char *policy = COM_SETTING_STRING(POLICY);
        int64_t turn = COM_SETTING_INT(DAEMON_TURN_TIMEOUT_MS);
        const char *name = COM_SETTING_STRING(TASK_NAME);
        s->reads++;
        /* before the first init returned, a reader may see the defaults
         * (256, proactive); after it, only the environment's values */
        s->wrong_slots += slots != 64 && (strict || slots != 256);
        s->wrong_policy += !policy || (strcmp(policy, "demand") != 0 &&
                                       (strict || strcmp(policy, "proactive") != 0));
        s->wrong_timeout += turn != 10000 && turn != 250 && turn != 500;
        /* an override's text is a copy: the caller's buffer is reused */
        s->wrong_name +=
            strcmp(name, "") != 0 && strcmp(name, "task0") != 0 && strcmp(name, "task1") != 0;
    }
    return NULL;
}

static void test_reads_during_scoped_inits(void **state)
{
    (void)state;
    setenv("GMUX_NET_RING_SLOTS", "64", 1);
    setenv("GMUX_POLICY", "demand", 1);
    pthread_t t[READERS];
    struct seen s[READERS];
    memset(s, 0, sizeof(s));
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, reader, &s[i]), 0);
    while (atomic_load(&started) < READERS)
        ;
    char err[512];
    static const unsigned scopes[] = {COM_SCOPE_SHIM, COM_SCOPE_NET, COM_SCOPE_SHMEM,
                                      COM_SCOPE_CLIENT};
    /* the settings are the environment's from the first init on */
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_SHIM, err, sizeof(err)), GMUX_OK);
    atomic_store(&loaded, 1);
    for (int r = 0; r < ROUNDS; r++) {
        assert_int_equal(com_settings_init_scoped(scopes[r % (sizeof(scopes) / sizeof(scopes[0]))],
                                                  err, sizeof(err)),
                         GMUX_OK);
        assert_int_equal(com_settings_set(COM_SETTING_DAEMON_TURN_TIMEOUT_MS, r % 2 ? "250" : "500",
                                          err, sizeof(err)),
                         GMUX_OK);
        char name[16];
        snprintf(name, sizeof(name), "task%d", r % 2);
        assert_int_equal(com_settings_set(COM_SETTING_TASK_NAME, name, err, sizeof(err)), GMUX_OK);
        memcpy(name, "reused", 7);
        assert_int_equal(COM_SETTING_INT(NET_RING_SLOTS), 64);
        assert_string_equal(COM_SETTING_STRING(POLICY), "demand");
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < READERS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_true(s[i].reads > 0);
        assert_int_equal(s[i].wrong_slots, 0);
        assert_int_equal(s[i].wrong_policy, 0);
        assert_int_equal(s[i].wrong_timeout, 0);
        assert_int_equal(s[i].wrong_name, 0);
    }
    unsetenv("GMUX_NET_RING_SLOTS");
    unsetenv("GMUX_POLICY");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_during_scoped_inits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
