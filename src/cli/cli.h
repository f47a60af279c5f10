/* cli.h — pieces of the whisper-c command shared by its subcommands. */
#ifndef WC_CLI_H
#define WC_CLI_H

#include "libwhisperc.h"
#include "options.h"

/* Full params from the command line (greedy, openai-whisper transcribe() defaults). */
void cli_full_params(const struct cli_options *o, struct whisperc_full_params *fp);
/* Loads -m or the default model, after checking -vm's VAD file when --vad; prints the error
 * and returns 1 on failure. */
int cli_load_model(const struct cli_options *o, whisperc_model **model);

/* Writes the formats want[] (by enum out_format) names, base + ".txt" etc., from the state's
 * last run as the options say (model and fp: what -ojf records; duration_s: the json's
 * duration, < 0 for the state's timings, which after whisperc_full_batch are the whole
 * batch's). Returns 0, or an errno value (ENOMEM, ENOSPC, ...) with a one-line message in err
 * (then some formats may be written, none partially). */
int cli_write_outputs(const struct cli_options *o, const bool *want, const whisperc_state *st,
                      const whisperc_model *model, const struct whisperc_full_params *fp,
                      double duration_s, bool sync, const char *base, char *err, size_t err_size);

int cmd_bench(int argc, char **argv);
int cmd_batch(int argc, char **argv); /* batch.c: many files, resumable */
int cmd_ptx(int argc, char **argv);   /* writes the generated CUDA kernels */

#endif /* WC_CLI_H */
