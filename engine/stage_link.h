// engine/stage_link.h — bytes between the ranks of a pipeline (engine/pipeline.h).
//
// A StageLink is the one thing the pipeline knows of the wire: ranks 0 .. n_ranks - 1, and messages
// that each carry a tag, sent to one rank and received from one rank, in order per (sender, tag).
// Two kinds exist: over MPI (mpi_stage_link, when graphrun is built with Open MPI: the ranks are the
// processes of `mpirun -np N`), and in one process (local_stage_links: a rank per thread, for tests).
//
// Waiting has a limit: a receive that gets nothing within `timeout` seconds, or a send no one takes,
// is a rank that died or a link that hangs. The MPI link then ends every rank (abort_all) with a
// message naming both ranks; the local links throw StageLinkError. A pipeline never hangs; an idle
// rank waiting for its next command waits without a limit (recv_message(..., 0)).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace graphrun::graph {

class StageLinkError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class StageLink {
  public:
    virtual ~StageLink() = default;
    virtual int rank() const = 0;
    virtual int n_ranks() const = 0;
    // Sends `bytes` bytes to rank `to`; returns once they are on their way (the buffer may be reused).
    virtual void send(int to, int tag, const void* data, size_t bytes) = 0;
    // Receives exactly `bytes` bytes from rank `from` (a message of another length is an error).
    virtual void recv(int from, int tag, void* data, size_t bytes) = 0;
    // Receives the next message from `from` whatever its length; timeout_s 0 waits for ever.
    virtual std::vector<uint8_t> recv_message(int from, int tag, double timeout_s) = 0;
    // Ends every rank's process now with `message` (MPI: MPI_Abort); the local links throw instead.
    [[noreturn]] virtual void abort_all(const std::string& message) = 0;
    double timeout_s() const { return timeout_s_; }
    void set_timeout_s(double s) { timeout_s_ = s; }

  private:
    double timeout_s_ = 60;
};

// n links joined to each other, one per rank, for ranks that are threads of this process.
std::vector<std::unique_ptr<StageLink>> local_stage_links(int n_ranks);

// The link of this process under `mpirun -np N` (N > 1), initialising MPI; nullptr when graphrun
// runs alone (no mpirun, or -np 1). Throws StageLinkError when this build has no MPI but mpirun
// started several processes. The timeout is GRAPHRUN_STAGE_TIMEOUT seconds (default 60).
std::unique_ptr<StageLink> mpi_stage_link();
// Whether this build of graphrun can run over MPI (GRAPHRUN_MPI).
bool built_with_mpi();

}  // namespace graphrun::graph
