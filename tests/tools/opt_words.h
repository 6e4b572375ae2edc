/*
 * The argv of a command's words for the in-process tests of the gmux
 * commands' readers (test_view_opts, test_sim_opts, ...): prog, then the
 * NULL-ended words (as many as leave room for the NULL in cap entries),
 * then NULL, into argv. Returns argc.
 */
#ifndef GMUX_TEST_OPT_WORDS_H
#define GMUX_TEST_OPT_WORDS_H

static inline int opt_words_argv(char *prog, char **words, char **argv, int cap)
{
    int argc = 1;
    argv[0] = prog;
    while (words[argc - 1] && argc + 1 < cap) {
        argv[argc] = words[argc - 1];
        argc++;
    }
    argv[argc] = NULL;
    return argc;
}

#endif /* GMUX_TEST_OPT_WORDS_H */
