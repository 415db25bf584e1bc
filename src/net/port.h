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
 * of each).  n may be 0.  Fills port; hiar_port_mpi_free frees what it made.
 */
hiar_result_t hiar_port_mpi(const MPI_Comm *links, int n, hiar_port_t *port);
void hiar_port_mpi_free(hiar_port_t *port);

/*
 * Whether the MPI lets a thread of hiar call it while the application's
 * threads do (MPI_THREAD_MULTIPLE); *level: what MPI_Query_thread said.
 */
int hiar_port_mpi_threads_ok(int *level);

#endif
