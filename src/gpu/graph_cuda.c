/*
 * graph_cuda.c — backend.h's step graphs on CUDA (cuda_internal.h struct cuda_graphs).
 *
 * The first step of a key runs plain (it loads the step's kernels and sizes the scratch
 * buffers, which a recording must not see change); the second is captured
 * (cuStreamBeginCapture, relaxed mode), instantiated and launched; later ones run only the
 * ops' host side, which writes the step's inputs into the staging at the offsets the recording
 * copies from, and then cuGraphLaunch. The staging starts empty at every pass (begin syncs
 * when it is not), so a key's blocks land at the same offsets every time; the signature
 * checks that the replay issued what was recorded. Any failure turns graphs off for good on
 * the stream, and the step's ops are issued again as plain launches; but for a capture the
 * driver rejects while the stream launches kernels as dependent launches (a driver before
 * CUDA 12.3 cannot capture them): then the stream stops launching them that way, and the next
 * step is recorded again.
 *
 * tests/test_gpu_backend.c compares graph steps with plain steps bit for bit (equal on an H100,
 * 2026-11-24, docs/gpu-validation.md).
 */
#include <stdio.h>
#include <string.h>

#include "gpu/cuda_internal.h"
#include "libwhisperc.h"

static uint64_t mix(uint64_t h, uint64_t v) {
    h = (h ^ v) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

int cuda_graph_note(struct cuda_stream *cs, uint64_t a, uint64_t b, uint64_t c) {
    struct cuda_graphs *g = &cs->graphs;
    if (g->mode == CUDA_GRAPH_NONE)
        return 0;
    g->sig = mix(mix(mix(g->sig, a), b), c);
    return g->mode == CUDA_GRAPH_REPLAY;
}

int cuda_graph_refuse(struct cuda_stream *cs, const char *what) {
    struct cuda_graphs *g = &cs->graphs;
    if (g->mode == CUDA_GRAPH_NONE)
        return 0;
    if (!g->refused)
        g->refused = what;
    return 1;
}

void cuda_graph_drop_all(struct cuda_stream *cs) {
    const struct cuda_api *cu = &cs->m->cu;
    int any = 0;
    for (int k = 1; k <= CUDA_GRAPH_KEYS; k++)
        any |= cs->graphs.g[k].exec != NULL;
    if (!any)
        return;
    cu->stream_synchronize(cs->stream); /* a replay may still be running */
    for (int k = 1; k <= CUDA_GRAPH_KEYS; k++) {
        if (cs->graphs.g[k].exec)
            cu->graph_exec_destroy(cs->graphs.g[k].exec);
        cs->graphs.g[k].exec = NULL;
    }
}

/* Why the stream cannot use graphs at all (static text), or NULL. */
static const char *graphs_unavailable(const struct cuda_stream *cs) {
    const struct cuda_model *m = cs->m;
    if (m->no_graphs)
        return "switched off (WHISPERC_NO_CUDA_GRAPH=1)";
    if (m->sync_each_op)
        return "switched off (WHISPERC_CUDA_SYNC=1 syncs after every launch)";
    if (!m->cu.graph_launch)
        return "off: the CUDA driver has no graph API (cuGraphInstantiateWithFlags)";
    if (!cs->stage.host)
        return "off: no pinned staging";
    return NULL;
}

/* Turns graphs off for good after a failure. */
static void graphs_fail(struct cuda_stream *cs, const char *why) {
    struct cuda_graphs *g = &cs->graphs;
    g->off = 2;
    snprintf(g->why, sizeof g->why, "failed, plain launches from now on: %s", why);
    cuda_graph_drop_all(cs);
}

int cuda_step_graph_begin(struct wc_stream *s, int key) {
    struct cuda_stream *cs = cuda_stream(s);
    struct cuda_graphs *g = &cs->graphs;
    if (g->off || g->mode != CUDA_GRAPH_NONE || key < 1 || key > CUDA_GRAPH_KEYS ||
        cuda_op_begin(s))
        return 0;
    const char *why = graphs_unavailable(cs);
    if (why) {
        if (cs->stage.host) { /* no staging yet: plain until a sync gets it (stream_cuda.c) */
            g->off = 1;
            snprintf(g->why, sizeof g->why, "%s", why);
        }
        return 0;
    }
    struct cuda_step_graph *sg = &g->g[key];
    if (!sg->exec && sg->n_plain < 1) {
        sg->n_plain++;
        return 0;
    }
    /* the pass's blocks must sit where the recording's did: from an empty staging */
    if (cs->stage.used && cuda_sync(s))
        return 0;
    g->key = key;
    g->sig = 0x5e9a11ed;
    g->refused = NULL;
    if (sg->exec) {
        g->mode = CUDA_GRAPH_REPLAY;
        return 1;
    }
    CUresult r = cs->m->cu.stream_begin_capture(cs->stream, CU_STREAM_CAPTURE_MODE_RELAXED);
    if (r != CUDA_SUCCESS) {
        char msg[128];
        cuda_check(&cs->m->cu, r, "cuStreamBeginCapture", msg, sizeof msg);
        graphs_fail(cs, msg);
        return 0;
    }
    g->mode = CUDA_GRAPH_CAPTURE;
    return 1;
}

/* End of a replay pass: launch the recording if the pass matched it. */
static int replay_end(struct wc_stream *s, struct cuda_step_graph *sg) {
    struct cuda_stream *cs = cuda_stream(s);
    struct cuda_graphs *g = &cs->graphs;
    if (s->err) /* an op's check failed: nothing ran, and the stream says why */
        return 0;
    if (g->refused || g->sig != sg->sig || cs->stage.used != sg->staged) {
        char msg[128];
        snprintf(msg, sizeof msg, "step %d issued other ops than its recording (%s)", g->key,
                 g->refused ? g->refused : "shapes or buffers changed");
        graphs_fail(cs, msg);
        return 1;
    }
    cs->last_in_graph = true;
    if (!cuda_stream_check(s, cs->m->cu.graph_launch(sg->exec, cs->stream), "cuGraphLaunch"))
        g->n_replayed++;
    return 0;
}

/* End of a capture pass: instantiate and launch, or give up on graphs and have the caller
 * issue the ops again (none of them ran). */
static int capture_end(struct wc_stream *s, struct cuda_step_graph *sg) {
    struct cuda_stream *cs = cuda_stream(s);
    struct cuda_graphs *g = &cs->graphs;
    const struct cuda_api *cu = &cs->m->cu;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    char msg[sizeof s->errmsg] = "";
    CUresult r = cu->stream_end_capture(cs->stream, &graph), r_end = r;
    if (g->refused)
        snprintf(msg, sizeof msg, "%s in the step", g->refused);
    else if (s->err)
        snprintf(msg, sizeof msg, "%s", s->errmsg);
    else if (r != CUDA_SUCCESS || !graph)
        cuda_check(cu, r ? r : CUDA_ERROR_UNKNOWN, "cuStreamEndCapture", msg, sizeof msg);
    else if ((r = cu->graph_instantiate(&exec, graph, 0)) != CUDA_SUCCESS)
        cuda_check(cu, r, "cuGraphInstantiateWithFlags", msg, sizeof msg);
    if (graph)
        cu->graph_destroy(graph);
    if (g->chain_failed && !msg[0]) /* the recording holds a launch that failed */
        snprintf(msg, sizeof msg, "%s", cs->chain_why);
    if (msg[0]) {
        if (exec)
            cu->graph_exec_destroy(exec);
        /* the captured work never ran: an error it met was capture's, or comes back when the
         * caller issues the ops again */
        s->err = 0;
        s->errmsg[0] = '\0';
        /* r: the end's result, or the instantiation's after a good end */
        bool capture_refused = r_end == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
                               r_end == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ||
                               r == CUDA_ERROR_NOT_SUPPORTED;
        if (g->chain_failed) {
            /* chains are off now (cuda_launch_coop): once more without them, at the next step */
            g->chain_failed = false;
        } else if (cs->dep_launch && !g->refused && capture_refused) {
            /* the driver would not record the pass, perhaps for its dependent launches:
             * once more without them, at the next step */
            cs->dep_launch = false;
            snprintf(g->dep_why, sizeof g->dep_why, "off: a step graph with it failed (%s)", msg);
        } else {
            graphs_fail(cs, msg);
        }
        return 1;
    }
    sg->exec = exec;
    sg->sig = g->sig;
    sg->staged = cs->stage.used;
    g->n_captured++;
    cs->last_in_graph = true;
    if (!cuda_stream_check(s, cu->graph_launch(exec, cs->stream), "cuGraphLaunch"))
        g->n_replayed++;
    return 0;
}

int cuda_step_graph_end(struct wc_stream *s, int key) {
    struct cuda_stream *cs = cuda_stream(s);
    struct cuda_graphs *g = &cs->graphs;
    enum cuda_graph_mode mode = g->mode;
    if (mode == CUDA_GRAPH_NONE || key != g->key) {
        wc_stream_fail(s, WHISPERC_ERR_INVALID_ARG, "cuda: step_graph_end(%d) without its begin",
                       key);
        return 0;
    }
    g->mode = CUDA_GRAPH_NONE;
    cs->m->cu.ctx_set_current(cs->m->ctx);
    return mode == CUDA_GRAPH_REPLAY ? replay_end(s, &g->g[key]) : capture_end(s, &g->g[key]);
}

void cuda_step_graph_reset(struct wc_stream *s) {
    struct cuda_stream *cs = cuda_stream(s);
    if (cuda_graph_refuse(cs, "a reset")) /* inside a pass: that pass fails instead */
        return;
    cs->m->cu.ctx_set_current(cs->m->ctx);
    cuda_graph_drop_all(cs);
    for (int k = 1; k <= CUDA_GRAPH_KEYS; k++)
        cs->graphs.g[k].n_plain = 0;
}

int cuda_step_graph_state(const struct wc_stream *s, char *why, size_t why_size) {
    const struct cuda_stream *cs = s->impl;
    const struct cuda_graphs *g = &cs->graphs;
    const char *off = graphs_unavailable(cs);
    int state = g->off == 2 ? -1 : off ? 0 : g->n_captured > 0 ? 1 : 0;
    if (!why || !why_size)
        return state;
    if (g->off == 2)
        snprintf(why, why_size, "%s", g->why);
    else if (off)
        snprintf(why, why_size, "%s", off);
    else if (g->n_captured > 0)
        snprintf(why, why_size, "on: %ld step graphs recorded, %ld launched", g->n_captured,
                 g->n_replayed);
    else
        snprintf(why, why_size, "on, no step recorded yet");
    size_t n = strlen(why); /* how the kernels inside are launched (cuda_internal.h) */
    if (n < why_size)
        snprintf(why + n, why_size - n, "; dependent launch %s",
                 cs->dep_launch  ? "on"
                 : g->dep_why[0] ? g->dep_why
                 : cs->m->sm < 90
                     ? "off (before sm_90)"
                     : "off (WHISPERC_CUDA_PDL=0, or a driver without cuLaunchKernelEx)");
    n = strlen(why); /* and what runs a step's projections */
    if (n < why_size)
        snprintf(why + n, why_size - n, "; projections %s",
                 cs->m->gemv_tc == 1  ? "gemv_tc"
                 : cs->m->gemv_tc > 1 ? (cs->m->gemv_tc == 16 ? "gemv_tc, 16 columns a CTA"
                                                              : "gemv_tc, 32 columns a CTA")
                                      : "gemv_f16");
    n = strlen(why); /* and whether chains of them are cooperative kernels */
    if (n < why_size && (cs->m->chain || cs->chain_why[0]))
        snprintf(why + n, why_size - n, "; %schains %s",
                 cs->chain && cs->chain_blocks ? "block " : "",
                 !cs->chain        ? cs->chain_why
                 : !cs->dep_launch ? "on"
                 : cs->chain_early ? "on, launched early"
                                   : "on, not launched early (the driver refused cooperative "
                                     "with dependent launch)");
    n = strlen(why); /* block chains asked for, but off */
    if (n < why_size && cs->chain && cs->m->chain == 2 && !cs->chain_blocks)
        snprintf(why + n, why_size - n, " (block chains off: %s)", cs->blocks_why);
    n = strlen(why); /* and the encoder's GEMMs */
    if (n < why_size)
        snprintf(why + n, why_size - n, "; GEMMs %s%s%s%s", cs->m->gemm_lt ? "cuBLASLt" : "cuBLAS",
                 cs->m->lt_why[0] ? " (WHISPERC_CUDA_GEMM=lt: " : "", cs->m->lt_why,
                 cs->m->lt_why[0] ? ")" : "");
    return state;
}
