// engine/stage_link.cpp — the in-process links (a rank per thread), and the MPI link's stand-in for
// builds without MPI.
#include "engine/stage_link.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>

namespace graphrun::graph {

namespace {

// The mailboxes of every (sender, receiver, tag), shared by the local links of one group.
struct LocalWire {
    std::mutex mutex;
    std::condition_variable changed;
    std::map<std::tuple<int, int, int>, std::deque<std::vector<uint8_t>>> boxes;
};

class LocalLink : public StageLink {
  public:
    LocalLink(std::shared_ptr<LocalWire> wire, int rank, int n_ranks)
        : wire_(std::move(wire)), rank_(rank), n_ranks_(n_ranks) {}
    int rank() const override { return rank_; }
    int n_ranks() const override { return n_ranks_; }

    void send(int to, int tag, const void* data, size_t bytes) override {
        const auto* p = static_cast<const uint8_t*>(data);
        std::lock_guard lock(wire_->mutex);
        wire_->boxes[{rank_, to, tag}].emplace_back(p, p + bytes);
        wire_->changed.notify_all();
    }
    void recv(int from, int tag, void* data, size_t bytes) override {
        const std::vector<uint8_t> m = recv_message(from, tag, timeout_s());
        if (m.size() != bytes)
            throw StageLinkError("rank " + std::to_string(rank_) + ": a message of " + std::to_string(m.size()) +
                                 " bytes from rank " + std::to_string(from) + ", expected " + std::to_string(bytes));
        if (bytes > 0) std::memcpy(data, m.data(), bytes);  // an empty message may come with no buffer
    }
    std::vector<uint8_t> recv_message(int from, int tag, double timeout_s) override {
        std::unique_lock lock(wire_->mutex);
        auto& box = wire_->boxes[{from, rank_, tag}];
        auto ready = [&] { return !box.empty(); };
        if (timeout_s <= 0) {
            wire_->changed.wait(lock, ready);
        } else if (!wire_->changed.wait_for(lock, std::chrono::duration<double>(timeout_s), ready)) {
            throw StageLinkError("rank " + std::to_string(rank_) + ": nothing from rank " + std::to_string(from) +
                                 " within " + std::to_string(int(timeout_s)) + " s");
        }
        std::vector<uint8_t> m = std::move(box.front());
        box.pop_front();
        return m;
    }
    [[noreturn]] void abort_all(const std::string& message) override { throw StageLinkError(message); }

  private:
    std::shared_ptr<LocalWire> wire_;
    int rank_, n_ranks_;
};

}  // namespace

std::vector<std::unique_ptr<StageLink>> local_stage_links(int n_ranks) {
    auto wire = std::make_shared<LocalWire>();
    std::vector<std::unique_ptr<StageLink>> links;
    for (int r = 0; r < n_ranks; ++r) links.push_back(std::make_unique<LocalLink>(wire, r, n_ranks));
    return links;
}

#ifndef GRAPHRUN_MPI
// Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE in each process it starts (MPICH's: PMI_SIZE).
std::unique_ptr<StageLink> mpi_stage_link() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
        if (const char* n = std::getenv(var); n && std::atoi(n) > 1)
            throw StageLinkError(std::string("mpirun started ") + n +
                                 " processes, but this graphrun was built without MPI (install libopenmpi-dev and "
                                 "configure again: GRAPHRUN_MPI)");
    return nullptr;
}
bool built_with_mpi() {
    return false;
}
#endif

}  // namespace graphrun::graph
