// engine/mpi_link.cpp — the StageLink over MPI (Open MPI from Debian), built with GRAPHRUN_MPI.
//
// Every call is non-blocking underneath (MPI_Isend / MPI_Irecv / MPI_Iprobe) and polled until done
// or past the link's timeout, so a peer that died or hangs ends every rank (MPI_Abort) with a
// message naming it, never a hang.
// Polling spins for a short while, then sleeps between polls, so a rank waiting for its next
// command leaves its core to the others. MPI calls are serialised by one mutex (the server calls
// from more than one thread), which MPI_THREAD_SERIALIZED allows.
#ifdef GRAPHRUN_MPI
#include <mpi.h>

#include <pthread.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <vector>
#include <thread>

#include "engine/stage_link.h"

namespace graphrun::graph {

namespace {

using Clock = std::chrono::steady_clock;

class MpiLink : public StageLink {
  public:
    MpiLink() {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &n_ranks_);
        if (const char* t = std::getenv("GRAPHRUN_STAGE_TIMEOUT"); t && std::atof(t) > 0)
            set_timeout_s(std::atof(t));
    }
    ~MpiLink() override {
        poll([this] { return pending_.empty(); }, "sending to", rank_, 0);  // until every send is taken
        std::lock_guard lock(mutex_);
        MPI_Finalize();
    }
    int rank() const override { return rank_; }
    int n_ranks() const override { return n_ranks_; }

    // The bytes are copied and sent in the background: a send never waits for its receiver, so two
    // ranks sending to each other at once (rank 0 the next chunk's activations, the last rank the
    // rows of the one before) cannot block each other. Sends still under way are completed by every
    // later call and before MPI_Finalize; one that no receiver takes within the timeout ends every rank.
    void send(int to, int tag, const void* data, size_t bytes) override {
        const auto* p = static_cast<const uint8_t*>(data);
        std::lock_guard lock(mutex_);
        complete_sends();
        Pending& s = pending_.emplace_back();
        s.bytes.assign(p, p + bytes);
        s.to = to;
        s.start = Clock::now();
        MPI_Isend(s.bytes.data(), int(bytes), MPI_BYTE, to, tag, MPI_COMM_WORLD, &s.request);
    }
    void recv(int from, int tag, void* data, size_t bytes) override {
        MPI_Request request;
        {
            std::lock_guard lock(mutex_);
            MPI_Irecv(data, int(bytes), MPI_BYTE, from, tag, MPI_COMM_WORLD, &request);
        }
        const MPI_Status status = wait(request, "receiving from", from, timeout_s());
        int got = 0;
        MPI_Get_count(&status, MPI_BYTE, &got);
        if (size_t(got) != bytes)
            abort_all("rank " + std::to_string(rank_) + ": a message of " + std::to_string(got) + " bytes from rank " +
                      std::to_string(from) + ", expected " + std::to_string(bytes));
    }
    std::vector<uint8_t> recv_message(int from, int tag, double timeout_s) override {
        MPI_Status status;
        poll(
            [&] {
                int flag = 0;
                MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &status);
                return flag != 0;
            },
            "receiving from", from, timeout_s);
        int n = 0;
        MPI_Get_count(&status, MPI_BYTE, &n);
        std::vector<uint8_t> m(static_cast<size_t>(n));
        recv(from, tag, m.data(), m.size());
        return m;
    }
    [[noreturn]] void abort_all(const std::string& message) override {
        std::fprintf(stderr, "graphrun: %s\n", message.c_str());
        std::fflush(stderr);
        std::lock_guard lock(mutex_);
        MPI_Abort(MPI_COMM_WORLD, 1);
        std::abort();
    }

  private:
    MPI_Status wait(MPI_Request& request, const char* what, int peer, double timeout_s) {
        MPI_Status status{};
        poll(
            [&] {
                int flag = 0;
                MPI_Test(&request, &flag, &status);
                return flag != 0;
            },
            what, peer, timeout_s);
        return status;
    }
    // Calls done() under the lock until it is true: spinning for the first 2 ms, then every 200 us.
    template <typename Done>
    void poll(Done done, const char* what, int peer, double timeout_s) {
        const Clock::time_point start = Clock::now();
        for (;;) {
            {
                std::lock_guard lock(mutex_);
                complete_sends();
                if (done()) return;
                if (!pending_.empty() && seconds_since(pending_.front().start) > this->timeout_s()) {
                    peer = pending_.front().to;
                    what = "sending to";
                    timeout_s = this->timeout_s();
                    break;
                }
            }
            if (timeout_s > 0 && seconds_since(start) > timeout_s) break;
            if (seconds_since(start) > 0.002) std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        // Whichever thread waits (the server's scheduler, an embedder), the pipeline is broken:
        // every rank ends now, not only the caller.
        abort_all("rank " + std::to_string(rank_) + ": " + what + " rank " + std::to_string(peer) + ": nothing for " +
                  std::to_string(int(timeout_s)) + " s (GRAPHRUN_STAGE_TIMEOUT): that rank died or hangs");
    }
    // Under the lock: the sends their receivers took are done with.
    void complete_sends() {
        while (!pending_.empty()) {
            int flag = 0;
            MPI_Test(&pending_.front().request, &flag, MPI_STATUS_IGNORE);
            if (!flag) break;
            pending_.pop_front();
        }
    }
    static double seconds_since(Clock::time_point t) {
        return std::chrono::duration<double>(Clock::now() - t).count();
    }

    struct Pending {
        std::vector<uint8_t> bytes;
        int to = 0;
        Clock::time_point start;
        MPI_Request request;
    };
    std::deque<Pending> pending_;  // in the order sent; MPI completes them in order per receiver
    std::mutex mutex_;
    int rank_ = 0, n_ranks_ = 1;
};

}  // namespace

std::unique_ptr<StageLink> mpi_stage_link() {
    bool under_mpirun = false;
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
        if (const char* n = std::getenv(var); n && std::atoi(n) > 1) under_mpirun = true;
    if (!under_mpirun) return nullptr;
    // MPI's own threads start here: they keep SIGTERM and SIGINT blocked, so those signals reach
    // graphrun's threads (serve drains on SIGTERM) and not a thread whose default is to end the process.
    sigset_t signals, before;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, &before);
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (provided < MPI_THREAD_SERIALIZED)
        throw StageLinkError("this MPI gives threads level " + std::to_string(provided) +
                             "; graphrun needs MPI_THREAD_SERIALIZED");
    return std::make_unique<MpiLink>();
}

bool built_with_mpi() {
    return true;
}

}  // namespace graphrun::graph
#endif
