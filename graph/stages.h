// graph/stages.h — cutting a bound graph into pipeline stages by layer range, one per rank.
//
//   auto ranges = stage_ranges(graph, 2, "");          // balanced by weight bytes: {{0, 3}, {4, 7}}
//   Graph mine  = cut_stage(graph, ranges, rank);      // rank 1: layers 4-7, the final norm, the logits
//
// A layer is the nodes a `repeat` block unrolled to, named "blk.L."; the nodes before the first
// layer (the embedding) go to the first stage, those after the last layer (the final norm, the
// logits) to the last. At a cut exactly one value crosses: the hidden state the next layer reads
// (n_tokens, n_embd) f32. The stage after the cut reads it as the graph input stage_in; the stage
// before has it as its one output. Each stage keeps only the weights and the KV caches its own nodes
// read, so a rank maps the whole file but touches only its layers' weights and allocates only their
// caches. Nothing is computed differently: a stage's nodes are the whole graph's, in its order, so
// the pipeline's logits are the bits one process computes.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace graphrun::graph {

using LayerRange = std::pair<int, int>;  // first and last layer, inclusive

// The layer ranges of n_ranks stages: from `spec` ("0-10,11-21": every layer once, in order, one
// range per rank) or, when spec is empty, cut where the running sum of the layers' weight bytes
// crosses each rank's share. Throws GraphError naming the spec, or when there are more ranks than
// layers.
std::vector<LayerRange> stage_ranges(const Graph& graph, int n_ranks, std::string_view spec);

// Rank `rank`'s stage of `graph` for `ranges`. Throws GraphError when the graph does not cut there:
// a node outside every layer between two layers, or more than one value crossing a cut.
Graph cut_stage(const Graph& graph, const std::vector<LayerRange>& ranges, int rank);

}  // namespace graphrun::graph
