/*
 * Test helper: the scratch folder a test keeps its sockets and files in.
 * Tests make one with mkdtemp and, once their cmocka group has run, remove
 * it with all it holds; tdir_finish is that last step, so that a main()
 * ends with `return tdir_finish(dir, cmocka_run_group_tests(...));`.
 *
 * Removal walks the folder itself (no shell, so no quoting of the name) and
 * never follows a link: a link is removed, not what it points to.
 *
 * Thread-safety: none (it walks the file tree; one caller at a time).
 */
#ifndef GMUX_TESTS_TDIR_H
#define GMUX_TESTS_TDIR_H

#include <stddef.h>

/* The start of a main() whose tests talk to a daemon over a socket in dir:
 * makes dir (mkdtemp of its XXXXXX template; exits 1 with a message when it
 * cannot), writes "dir/d.sock" into path and ignores SIGPIPE (a peer that
 * closes first must fail a send, not end the test). */
void tdir_make_for_socket(char *dir, char *path, size_t path_size);

/* Removes dir and everything below it: 0, or -1 when something is left
 * (dir missing counts as left: the caller named a folder it expected). */
int tdir_remove(const char *dir);

/* The end of a test's main(): removes dir (tdir_remove) and returns rc,
 * the cmocka group's result, or 1 when rc is 0 and the removal failed. */
int tdir_finish(const char *dir, int rc);

#endif
