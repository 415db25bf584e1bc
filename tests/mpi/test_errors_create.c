/*
 * test_errors, part 2: hiar_comm_create.  Bad arguments and bad settings fail
 * on every rank (also when only one rank has them) and leave *out alone;
 * hiar_comm_create_f takes the communicator's Fortran handle; the
 * caller's MPI communicator may be freed at once; settings win over HIAR_*
 * environment variables, as hiar_comm_describe shows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hiar.h"
#include "test_errors.h"

/* Creation fails with `want` on every rank, leaves *out alone, and names `needle` where mine says so. */
static int create_fails(const char *what, const hiar_config_t *cfg, hiar_result_t want,
                        const char *needle)
{
    hiar_comm_t *sentinel = (hiar_comm_t *)&world_rank, *comm = sentinel;
    hiar_result_t rc = hiar_comm_create(MPI_COMM_WORLD, cfg, &comm);
    int ok = harness_expect(what, rc, want, needle);

    if (comm != sentinel) {
        printf("[rank %d] %s: the failed hiar_comm_create wrote *out\n", world_rank, what);
        ok = 0;
        if (rc == HIAR_SUCCESS)
            hiar_comm_abort(comm);
    }
    return ok;
}

void test_create_args(void)
{
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    hiar_comm_t *comm;
    int ok;

    cfg.size = sizeof(cfg) - 1;
    harness_verdict("hiar_comm_create with a wrong cfg->size",
                    create_fails("cfg->size - 1", &cfg, HIAR_INVALID_ARGUMENT, "cfg->size"));
    cfg.size = 0;
    harness_verdict("hiar_comm_create with cfg->size 0",
                    create_fails("cfg->size 0", &cfg, HIAR_INVALID_ARGUMENT, "HIAR_CONFIG_INIT"));
    ok = harness_expect("out NULL", hiar_comm_create(MPI_COMM_WORLD, NULL, NULL), HIAR_INVALID_ARGUMENT,
                        "out");
    comm = (hiar_comm_t *)&world_rank;
    ok &= harness_expect("MPI_COMM_NULL", hiar_comm_create(MPI_COMM_NULL, NULL, &comm), HIAR_INVALID_ARGUMENT,
                         "MPI_COMM_NULL");
    ok &= comm == (hiar_comm_t *)&world_rank;
    harness_verdict("hiar_comm_create with out NULL / MPI_COMM_NULL", ok);
}

/*
 * The Fortran-handle entry: MPI_COMM_WORLD's handle gives a comm over the
 * same ranks that sums correctly; a handle that names no communicator fails.
 */
void test_create_f(void)
{
    hiar_comm_t *comm = NULL;
    int ok = harness_expect("hiar_comm_create_f(MPI_Comm_c2f(MPI_COMM_WORLD))",
                            hiar_comm_create_f(MPI_Comm_c2f(MPI_COMM_WORLD), NULL, &comm), HIAR_SUCCESS, NULL);
    int size = 0;

    ok = ok && hiar_comm_size(comm, &size) == HIAR_SUCCESS && size == world_size && sum_works(comm);
    if (comm)
        ok &= hiar_comm_destroy(comm) == HIAR_SUCCESS;
    harness_verdict("hiar_comm_create_f of MPI_COMM_WORLD's Fortran handle sums over every rank", ok);
    harness_verdict("hiar_comm_create_f of a handle of no communicator",
                    harness_expect("fcomm -1", hiar_comm_create_f(-1, NULL, &comm), HIAR_INVALID_ARGUMENT,
                                   "Fortran handle") &&
                        harness_expect("fcomm 1 << 20", hiar_comm_create_f(1 << 20, NULL, &comm),
                                       HIAR_INVALID_ARGUMENT, "Fortran handle"));
}

void test_create_settings(void)
{
    static const struct {
        const char *settings, *needle;
    } bad[] = {
        {"HIAR_ALGO=bogus", "HIAR_ALGO"},
        {"NOT_A_PARAM=1", "NOT_A_PARAM"},
        {"HIAR_ALGO", "HIAR_ALGO"},
        {"HIAR_TIMEOUT_MS=-5", "HIAR_TIMEOUT_MS"},
        {"HIAR_BUFFER_SIZE=4X", "HIAR_BUFFER_SIZE"},
        {"HIAR_ALGO=mpi;HIAR_CHECK=sometimes", "HIAR_CHECK"},
    };
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    char name[128];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cfg.settings = bad[i].settings;
        snprintf(name, sizeof(name), "settings \"%s\" fail with a message naming %s", bad[i].settings,
                 bad[i].needle);
        harness_verdict(name, create_fails(bad[i].settings, &cfg, HIAR_INVALID_ARGUMENT, bad[i].needle));
    }
}

void test_create_groups(void)
{
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    char settings[64];

    cfg.settings = "HIAR_GROUPS=0,0";
    harness_verdict("HIAR_GROUPS naming rank 0 twice fails on every rank",
                    create_fails(cfg.settings, &cfg, HIAR_INVALID_ARGUMENT, "HIAR_GROUPS"));
    cfg.settings = "HIAR_GROUPS=0";
    harness_verdict("HIAR_GROUPS leaving out ranks fails on every rank",
                    create_fails(cfg.settings, &cfg, HIAR_INVALID_ARGUMENT, "rank 1"));
    snprintf(settings, sizeof(settings), "HIAR_GROUPS=0-%d", world_size);
    cfg.settings = settings;
    snprintf(settings + 32, 32, "rank %d", world_size);
    harness_verdict("HIAR_GROUPS naming a rank past the end fails on every rank",
                    create_fails("HIAR_GROUPS=0-<size>", &cfg, HIAR_INVALID_ARGUMENT, settings + 32));
}

/* A bad setting on one rank only: every rank must fail, not hang in the collective setup. */
void test_create_one_rank_differs(void)
{
    hiar_config_t cfg = HIAR_CONFIG_INIT;
    char settings[64];

    cfg.settings = world_rank == 1 ? "HIAR_ALGO=bogus" : NULL;
    harness_verdict("an invalid setting on rank 1 only fails on every rank",
                    create_fails("HIAR_ALGO=bogus on rank 1", &cfg, HIAR_INVALID_ARGUMENT,
                                 world_rank == 1 ? "HIAR_ALGO" : NULL));
    cfg.settings = world_rank == 1 ? "HIAR_ALGO=mpi" : NULL;
    harness_verdict("HIAR_ALGO differing across ranks fails on every rank",
                    create_fails("HIAR_ALGO=mpi on rank 1", &cfg, HIAR_INVALID_ARGUMENT, "HIAR_ALGO"));
    /* Each rank's grouping is valid on its own, but they differ. */
    cfg.settings = world_rank == 1 ? "HIAR_GROUP_LEVEL=RANK" : NULL;
    harness_verdict("HIAR_GROUP_LEVEL differing across ranks fails on every rank",
                    create_fails("HIAR_GROUP_LEVEL=RANK on rank 1", &cfg, HIAR_INVALID_ARGUMENT,
                                 "HIAR_GROUP_LEVEL"));
    snprintf(settings, sizeof(settings), "HIAR_GROUPS=0-%d", world_size - 1);
    cfg.settings = world_rank == 1 ? settings : NULL;
    harness_verdict("HIAR_GROUPS differing across ranks fails on every rank",
                    create_fails("HIAR_GROUPS on rank 1 only", &cfg, HIAR_INVALID_ARGUMENT, "HIAR_GROUPS"));
}

/* The MPI communicator is duplicated: the caller may free its own right away. */
void test_caller_frees_mpi_comm(void)
{
    hiar_comm_t *comm = NULL;
    MPI_Comm mine;
    int ok;

    MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &mine);
    ok = harness_expect("hiar_comm_create on a split comm", hiar_comm_create(mine, NULL, &comm), HIAR_SUCCESS,
                        NULL);
    MPI_Comm_free(&mine);
    if (comm) {
        int rank = -1;
        ok &= hiar_comm_rank(comm, &rank) == HIAR_SUCCESS && rank == world_size - 1 - world_rank;
        ok &= sum_works(comm);
        ok &= hiar_comm_destroy(comm) == HIAR_SUCCESS;
    }
    harness_verdict("the caller may free its MPI communicator after hiar_comm_create", ok);
}

/* Text hiar_comm_describe writes for comm. */
static char *describe(hiar_comm_t *comm)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    if (!f)
        return NULL;
    if (hiar_comm_describe(comm, f) != HIAR_SUCCESS)
        fprintf(f, "(hiar_comm_describe failed: %s)", hiar_last_error());
    fclose(f);
    return text;
}

/* Whether describe() of a comm created with `settings` (and HIAR_ALGO=env_algo) names `want`. */
static int algo_described(const char *env_algo, const char *settings, const char *want,
                          const char *unwanted)
{
    hiar_comm_t *comm;
    char *text;
    int ok;

    if (env_algo)
        setenv("HIAR_ALGO", env_algo, 1);
    comm = harness_create(settings);
    unsetenv("HIAR_ALGO");
    if (!comm)
        return 0;
    text = describe(comm);
    ok = text && strstr(text, want) && !(unwanted && strstr(text, unwanted));
    if (!ok)
        printf("[rank %d] HIAR_ALGO env %s, settings \"%s\": describe should say \"%s\"%s%s:\n%s\n",
               world_rank, env_algo ? env_algo : "unset", settings ? settings : "", want,
               unwanted ? " and not " : "", unwanted ? unwanted : "", text ? text : "(none)");
    free(text);
    ok &= sum_works(comm);
    ok &= hiar_comm_destroy(comm) == HIAR_SUCCESS;
    return ok;
}

void test_config_precedence(void)
{
    harness_verdict("settings HIAR_ALGO=mpi shows in hiar_comm_describe",
                    algo_described(NULL, "HIAR_ALGO=mpi", "HIAR_ALGO=mpi", NULL));
    harness_verdict("environment HIAR_ALGO=twoshot shows in hiar_comm_describe",
                    algo_described("twoshot", NULL, "HIAR_ALGO=twoshot", NULL));
    harness_verdict("settings win over the environment",
                    algo_described("twoshot", "HIAR_ALGO=mpi", "HIAR_ALGO=mpi", "HIAR_ALGO=twoshot"));
    harness_verdict("HIAR_ALGO unset: no forced path in hiar_comm_describe",
                    algo_described(NULL, NULL, "ranks", "HIAR_ALGO="));
}
