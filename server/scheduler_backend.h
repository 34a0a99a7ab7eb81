// server/scheduler_backend.h — the Backend `graphrun serve` runs: the continuous scheduler
// (engine/scheduler.h). Up to `parallel` sequences share every forward pass over one paged KV cache,
// waiting requests join after every pass, a full queue is BackendBusy (HTTP 503).
#pragma once

#include <memory>

#include "engine/scheduler.h"
#include "server/backend.h"

namespace graphrun::server {

std::unique_ptr<Backend> make_scheduler_backend(std::shared_ptr<const graph::Model> model,
                                                graph::SchedulerOptions options);

}  // namespace graphrun::server
