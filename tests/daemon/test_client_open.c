/*
 * What a client of the daemon (src/daemon/client.c) says when it cannot be
 * opened, which the shim's gate repeats in its warning: the system's reason,
 * not a status word. A socket the task may not connect to (mode 0; as
 * root the opening runs in a child that has become nobody, which the mode
 * then stops) failed with GMUX_ERR_PERM, and the words given for that were
 * "gmuxd refused the task", though no daemon had seen the task.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/client.h"
#include "daemon/endpoint.h"
#include "tdir.h"

static char dir[] = "/tmp/gmux-clo-XXXXXX";
static char sock[128];

/* In a child (nobody when root): opens a client on sock and writes the
 * status and the words it gives for it into why; the child's exit status
 * says whether it got that far. */
static void open_in_child(gmux_status_t *st, char *why, size_t cap)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(3);
        dmn_client_opts_t o = {.path = sock, .name = "open-test"};
        dmn_client_t *c = NULL;
        char words[DMN_CLIENT_WHY_MAX] = "";
        gmux_status_t s = dmn_client_open_why(&o, &c, words, sizeof(words));
        if (s == GMUX_OK)
            dmn_client_close(c);
        (void)!write(p[1], &s, sizeof(s));
        (void)!write(p[1], words, sizeof(words));
        _exit(0);
    }
    close(p[1]);
    char words[DMN_CLIENT_WHY_MAX];
    assert_int_equal(read(p[0], st, sizeof(*st)), (ssize_t)sizeof(*st));
    assert_int_equal(read(p[0], words, sizeof(words)), (ssize_t)sizeof(words));
    close(p[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    snprintf(why, cap, "%s", words);
}

static void test_connect_not_permitted(void **state)
{
    (void)state;
    int lfd, lk;
    assert_int_equal(dmn_endpoint_listen(sock, DMN_NO_GROUP, 0, &lfd, &lk, NULL, 0), GMUX_OK);
    assert_int_equal(chmod(sock, 0), 0);
    gmux_status_t st;
    char why[512];
    open_in_child(&st, why, sizeof(why));
    print_message("open: %s: %s\n", gmux_status_name(st), why);
    assert_int_equal(st, GMUX_ERR_PERM);
    assert_non_null(strstr(why, sock));
    assert_non_null(strstr(why, strerror(EACCES)));
    assert_null(strstr(why, "refused"));
    dmn_endpoint_unlisten(sock, lfd, lk, 1);
}

int main(void)
{
    if (!mkdtemp(dir) || chmod(dir, 0755) != 0)
        return 1;
    snprintf(sock, sizeof(sock), "%s/d.sock", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect_not_permitted),
    };
    return tdir_finish(dir, cmocka_run_group_tests(tests, NULL, NULL));
}
