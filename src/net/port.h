/*
 * The progress engine's port over MPI (net/progress.h): link l is MPI
 * communicator links[l], which the port duplicates so that the engine's
 * tags meet nobody else's messages.
 */
#ifndef HIAR_NET_PORT_H
#define HIAR_NET_PORT_H

#include <mpi.h>

#include "net/progress.h"

/*
 * Collective over every links[l] in order (the same order on every rank
 * of each).  n may be 0.  Fills port; hiar_port_mpi_free frees what it made
 * (also after a failure).  In two steps where a rank must not leave the
 * others waiting in the dups: hiar_port_mpi_alloc, this rank's memory
 * alone (agree on its outcome before), then hiar_port_mpi_dup, the
 * collective part, which allocates nothing.
 */
hiar_result_t hiar_port_mpi(const MPI_Comm *links, int n, hiar_port_t *port);
hiar_result_t hiar_port_mpi_alloc(int n, hiar_port_t *port);
hiar_result_t hiar_port_mpi_dup(hiar_port_t *port, const MPI_Comm *links);
void hiar_port_mpi_free(hiar_port_t *port);

/*
 * Whether the MPI lets a thread of hiar call it while the application's
 * threads do (MPI_THREAD_MULTIPLE); *level: what MPI_Query_thread said.
 */
int hiar_port_mpi_threads_ok(int *level);

#endif
