// engine/pipeline.cpp — rank 0's commands to the other ranks, and the loop that carries them out.
#include "engine/pipeline.h"

#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "engine/engine.h"
#include "engine/model.h"

namespace graphrun::graph {

PipelineMessage& PipelineMessage::put(int64_t word) {
    const auto* p = reinterpret_cast<const uint8_t*>(&word);
    bytes_.insert(bytes_.end(), p, p + sizeof word);
    return *this;
}

PipelineMessage& PipelineMessage::put(const std::string& text) {
    put(int64_t(text.size()));
    bytes_.insert(bytes_.end(), text.begin(), text.end());
    return *this;
}

int64_t PipelineMessage::word() {
    if (bytes_.size() - read_ < sizeof(int64_t))
        throw StageLinkError("a pipeline command of " + std::to_string(bytes_.size()) + " bytes ends at byte " +
                             std::to_string(read_) + ", where a word was expected");
    int64_t w;
    std::memcpy(&w, bytes_.data() + read_, sizeof w);
    read_ += sizeof w;
    return w;
}

std::string PipelineMessage::text() {
    const int64_t n = word();
    if (n < 0 || uint64_t(n) > bytes_.size() - read_)
        throw StageLinkError("a pipeline command holds a string of " + std::to_string(n) + " bytes past its end");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + read_), size_t(n));
    read_ += size_t(n);
    return s;
}

Pipeline::Pipeline(std::unique_ptr<StageLink> link, std::string stages)
    : link_(std::move(link)), stages_(std::move(stages)) {}

Pipeline::~Pipeline() {
    if (leads() && !stopped_) {
        try {
            tell(PipelineMessage().put(int64_t(PipelineCommand::Stop)));
        } catch (const StageLinkError&) {  // a rank already gone: nothing is left to stop
        }
    }
}

void Pipeline::tell(const PipelineMessage& m) {
    for (int r = 1; r < n_ranks(); ++r) link_->send(r, kCommandTag, m.bytes().data(), m.bytes().size());
}

std::string Pipeline::summary() const {
    std::ostringstream line;
    line << "rank " << rank() << " of " << n_ranks();
    if (const auto& s = stage_)
        line << ": layers " << s->first_layer << "-" << s->last_layer << " of " << s->n_layer << ", weights "
             << s->weight_bytes << " of " << s->whole_weight_bytes << " bytes";
    line << ", peak resident " << peak_resident_bytes() << " bytes";
    return line.str();
}

int64_t peak_resident_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:  1234 kB"
    return 0;
}

namespace {

// What one follower holds: the models and engines rank 0 made, by their pipeline ids.
struct Follower {
    Pipeline& pipeline;
    std::map<int64_t, std::shared_ptr<const Model>> models;
    std::map<int64_t, std::unique_ptr<Engine>> engines;

    Engine& engine(int64_t id) {
        auto it = engines.find(id);
        if (it == engines.end())
            throw StageLinkError("rank " + std::to_string(pipeline.rank()) + ": rank 0 names engine " +
                                 std::to_string(id) + ", which this rank does not hold");
        return *it->second;
    }

    void load_model(PipelineMessage& m) {
        const int64_t id = m.word();
        const std::string model_path = m.text(), graph_path = m.text();
        auto model = Model::load(model_path, graph_path, &pipeline);
        if (model->pipeline_id() != id)  // each rank numbers its models as rank 0 does, in load order
            throw StageLinkError("rank " + std::to_string(pipeline.rank()) + ": rank 0's model " + std::to_string(id) +
                                 " is this rank's model " + std::to_string(model->pipeline_id()));
        models[id] = std::move(model);
    }

    void make_engine(PipelineMessage& m) {
        const int64_t id = m.word(), model = m.word();
        EngineOptions o;
        o.n_ctx = m.word();
        o.n_seq = m.word();
        o.kv_blocks = m.word();
        o.n_threads = int(m.word());
        o.max_batch = m.word();
        o.prefix_cache = m.word() != 0;
        o.simd = ops::SimdLevel(m.word());
        auto it = models.find(model);
        if (it == models.end())
            throw StageLinkError("rank " + std::to_string(pipeline.rank()) + ": engine " + std::to_string(id) +
                                 " is of model " + std::to_string(model) + ", which this rank does not hold");
        engines[id] = std::make_unique<Engine>(it->second, o);
    }

    // An engine's call, as rank 0 made it. What it throws, it threw on rank 0 too (the engines hold
    // the same sequences), where the caller handled it; here it is dropped.
    void engine_call(PipelineCommand c, PipelineMessage& m) {
        Engine& e = engine(m.word());
        try {
            switch (c) {
                case PipelineCommand::AddSequence:
                    e.add_sequence();
                    break;
                case PipelineCommand::Fork:
                    e.fork(SeqId(m.word()));
                    break;
                case PipelineCommand::ReusePrefix: {
                    const SeqId seq = SeqId(m.word());
                    std::vector<int32_t> prompt(size_t(m.word()));
                    for (int32_t& t : prompt) t = int32_t(m.word());
                    e.reuse_prefix(seq, prompt);
                    break;
                }
                case PipelineCommand::RemoveSequence:
                    e.remove_sequence(SeqId(m.word()));
                    break;
                case PipelineCommand::Truncate: {
                    const SeqId seq = SeqId(m.word());
                    e.truncate(seq, m.word());
                    break;
                }
                case PipelineCommand::Decode: {
                    const bool embedding = m.word() != 0;
                    std::vector<BatchToken> batch(size_t(m.word()));
                    for (BatchToken& bt : batch) {
                        bt.seq = SeqId(m.word());
                        bt.token = int32_t(m.word());
                        bt.logits = m.word() != 0;
                    }
                    if (embedding)
                        e.embed(batch);
                    else
                        e.decode(batch);
                    break;
                }
                default:
                    break;
            }
        } catch (const StageLinkError&) {
            throw;
        } catch (const std::exception&) {
        }
    }
};

}  // namespace

std::string Pipeline::follow() {
    const std::string me = "rank " + std::to_string(rank());
    Follower f{*this, {}, {}};
    try {
        for (;;) {
            PipelineMessage m(link_->recv_message(0, kCommandTag, 0));
            const auto c = PipelineCommand(m.word());
            switch (c) {
                case PipelineCommand::LoadModel:
                    f.load_model(m);
                    break;
                case PipelineCommand::DropModel:
                    f.models.erase(m.word());
                    break;
                case PipelineCommand::MakeEngine:
                    f.make_engine(m);
                    break;
                case PipelineCommand::DropEngine:
                    f.engines.erase(m.word());
                    break;
                case PipelineCommand::Stop:
                    stopped_ = true;
                    f.engines.clear();
                    return summary();
                default:
                    f.engine_call(c, m);
                    break;
            }
        }
    } catch (const std::exception& e) {  // a link that failed, or a model or engine this rank cannot make
        link_->abort_all(me + ": " + e.what());
    }
    return {};  // not reached: abort_all ends the process or throws
}

}  // namespace graphrun::graph
