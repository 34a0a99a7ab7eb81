// server/serial_backend.h — a Backend that runs one job at a time on a Session (engine/session.h).
//
// No sequences are shared: the next job waits for the one before to end. It is the reference the
// scheduler's answers are held to (a greedy job gives the same tokens on both) and the backend for
// graph files the batched engine cannot run.
#pragma once

#include <memory>

#include "engine/session.h"
#include "server/backend.h"

namespace graphrun::server {

struct SerialBackendOptions {
    int64_t n_ctx = 0;      // 0: the model's context, at most 2048
    int64_t max_queue = 16; // jobs waiting at most
    int n_threads = 0;
};

std::unique_ptr<Backend> make_serial_backend(std::shared_ptr<const graph::Model> model,
                                             SerialBackendOptions options = {});

}  // namespace graphrun::server
