/* cli.h — pieces of the whisper-c command shared by its subcommands. */
#ifndef WC_CLI_H
#define WC_CLI_H

#include "libwhisperc.h"
#include "options.h"

/* Full params from the command line (greedy, openai-whisper transcribe() defaults). */
void cli_full_params(const struct cli_options *o, struct whisperc_full_params *fp);
/* Loads -m or the default model; prints the error and returns 1 on failure. */
int cli_load_model(const struct cli_options *o, whisperc_model **model);

int cmd_bench(int argc, char **argv);
int cmd_batch(int argc, char **argv); /* batch.c: many files, resumable */
int cmd_ptx(int argc, char **argv);   /* writes the generated CUDA kernels */

#endif /* WC_CLI_H */
