#include "compiler/passes/fusion_plan.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>

#include "compiler/ir/printer.h"
#include "compiler/passes/fusion_rules.h"

namespace kforge::passes {
namespace {

constexpr int kNoGroup = -1;
// The most one-element nodes one merged group computes (each with a pointer in and one out).
constexpr size_t kMaxOneElementNodes = 64;

using Kind = FusionGroup::Kind;

// Grows groups over the graph in topological order. A pointwise op joins the groups of its
// producers that share its iteration space (same-shape pointwise groups; a reduction group whose
// full or reduced shape it has; a matmul or window group whose output shape it has) when that creates no
// cycle between groups; a reduction joins the group of its input when that group reduces the same
// space or is a pointwise group over the space's full shape. A row gather (one element per row)
// starts a reduction group over the rows it picks from. Reduction groups over the same rows merge
// where a pointwise op reads both. A pointwise group of a smaller, broadcasting shape that only one
// pointwise op reads is absorbed into that op's group and recomputed there.
class Planner {
 public:
  explicit Planner(const ir::Graph& graph)
      : graph_(graph), group_of_(graph.size(), kNoGroup), users_(graph.size()), returned_(graph.size(), false) {
    for (const ir::Value& value : graph_) {
      for (const ir::NodeRef& ref : TensorInputs(value)) users_[ref.value].push_back(value.id);
    }
    for (const ir::NodeRef& out : graph_.LiveOuts()) returned_[out.value] = true;
  }

  FusionPlan Run() {
    for (const ir::Value& value : graph_) {
      if (value.kind != ir::ValueKind::kOp) continue;
      if (IsFusablePointwise(graph_, value)) {
        AddPointwise(value);
      } else if (auto space = FusableReductionSpace(graph_, value)) {
        AddReduction(value, *space);
      } else if (auto rows = RowGatherSpace(graph_, value); rows && !rows->split()) {
        spaces_[NewGroup(Kind::kReduction, value.id)] = *rows;
      } else if (ReadsAtComputedPositions(graph_, value)) {
        NewGroup(Kind::kPointwise, value.id);
      } else if (IsFusableMatmul(graph_, value)) {
        NewGroup(Kind::kMatmul, value.id);
      } else if (IsFusablePooling(graph_, value)) {
        NewGroup(Kind::kWindow, value.id);
      } else if (IsAttention(value)) {
        NewGroup(Kind::kAttention, value.id);
      } else if (IsRecurrence(value)) {
        NewGroup(Kind::kRecurrence, value.id);
      } else {
        NewGroup(IsMetadataView(value) ? Kind::kView : Kind::kLibrary, value.id);
      }
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].kind == Kind::kAttention) AbsorbBiasProducers(static_cast<int>(g));
    }
    MergeOneElementGroups();
    return Order();
  }

 private:
  int NewGroup(Kind kind, ir::ValueId id) {
    groups_.push_back(FusionGroup{kind, {id}, ""});
    spaces_.emplace_back();
    shapes_.push_back(graph_.value(id).type().shape);
    group_of_[id] = static_cast<int>(groups_.size()) - 1;
    return group_of_[id];
  }

  void AddReduction(const ir::Value& value, const ReductionSpace& space) {
    int group = group_of_[TensorInputs(value).front().value];
    bool joins = group != kNoGroup && !Closed(group) && !MakesCycle({group}, value.id) &&
                 ((groups_[group].kind == Kind::kReduction && spaces_[group] == space) ||
                  (groups_[group].kind == Kind::kPointwise && GroupShape(group) == space.full && !Absorbing(group)));
    if (!joins) {
      group = NewGroup(Kind::kReduction, value.id);
      spaces_[group] = space;
      return;
    }
    groups_[group].kind = Kind::kReduction;
    spaces_[group] = space;
    groups_[group].nodes.push_back(value.id);
    group_of_[value.id] = group;
  }

  // Whether pointwise op `value` may join `group`, and whether `group` anchors the merge (a
  // reduction or matmul group: at most one per merge, besides reduction groups over the same rows,
  // and a matmul group takes no other group).
  bool Joinable(const ir::Value& value, int group, bool* anchor) const {
    const ir::Shape& shape = value.type().shape;
    *anchor = groups_[group].kind == Kind::kReduction || groups_[group].kind == Kind::kMatmul ||
              groups_[group].kind == Kind::kWindow;
    switch (groups_[group].kind) {
      case Kind::kPointwise: return SameIterationSpace(value, GroupShape(group));
      case Kind::kReduction: {
        if (!InReductionSpace(shape, *spaces_[group])) return false;
        // A split reduction's kernels compute nothing of the full shape after the reduction.
        if (!spaces_[group]->split() || shape != spaces_[group]->full) return true;
        for (const ir::NodeRef& ref : TensorInputs(value)) {
          if (group_of_[ref.value] == group && graph_.TypeOf(ref)->shape != spaces_[group]->full) return false;
        }
        return true;
      }
      case Kind::kMatmul:
      case Kind::kWindow: return shape == graph_.value(groups_[group].nodes.front()).type().shape;
      default: return false;
    }
  }

  void AddPointwise(const ir::Value& value) {
    std::set<int> merged, absorbed;
    int anchor = kNoGroup, closed = kNoGroup;
    for (const ir::NodeRef& ref : TensorInputs(value)) {
      int group = group_of_[ref.value];
      bool is_anchor = false;
      if (group == kNoGroup || merged.count(group) || absorbed.count(group)) continue;
      if (Closed(group)) {
        if (closed == kNoGroup) closed = group;
        continue;
      }
      if (Absorbable(group, value)) {
        absorbed.insert(group);
        continue;
      }
      if (!Joinable(value, group, &is_anchor)) continue;
      if (is_anchor && anchor != kNoGroup && !SameRows(anchor, group)) continue;
      std::set<int> candidate = merged;
      candidate.insert(group);
      if (MakesCycle(candidate, value.id)) continue;
      merged = candidate;
      if (is_anchor) anchor = group;
    }
    if (anchor != kNoGroup) {
      // Pointwise producers join an anchor only where the anchor's kernel can compute them: a
      // reduction group takes those in its space, a matmul group pointwise groups over its output's
      // shape (its epilogue computes them: a decay mask recomputed beside the product it scales),
      // a window group none. Groups that feed the anchor's operands would make a cycle.
      std::set<int> kept;
      if (!MakesCycle({anchor}, value.id)) kept.insert(anchor);
      for (int group : merged) {
        if (kept.empty() || group == anchor) continue;
        if (groups_[anchor].kind == Kind::kMatmul && groups_[group].kind == Kind::kPointwise && !Absorbing(group) &&
            GroupShape(group) == value.type().shape && TakesProducers(anchor) &&
            groups_[group].nodes.front() > groups_[anchor].nodes.front() && !Feeds(group, anchor)) {
          std::set<int> trial = kept;
          trial.insert(group);
          if (!MakesCycle(trial, value.id)) kept = trial;
          continue;
        }
        if (groups_[anchor].kind != Kind::kReduction) continue;
        if (groups_[group].kind == Kind::kReduction && !SameRows(anchor, group)) continue;
        if (Absorbing(group)) continue;  // a reduction kernel computes only its space's shapes
        std::set<int> trial = kept;
        trial.insert(group);
        if (InReductionSpace(GroupShape(group), *spaces_[anchor]) && !MakesCycle(trial, value.id)) kept = trial;
      }
      merged = kept;
      if (kept.empty()) anchor = kNoGroup;
    }
    // Small producers are absorbed only into a pointwise kernel, and only while that makes no cycle.
    if (anchor != kNoGroup) absorbed.clear();
    std::set<int> all = merged;
    for (int group : absorbed) {
      std::set<int> trial = all;
      trial.insert(group);
      if (!MakesCycle(trial, value.id)) all = trial;
    }
    if (merged.empty() && absorbed.empty() && closed != kNoGroup && SameIterationSpace(value, GroupShape(closed)) &&
        !MakesCycle({closed}, value.id)) {
      // Nothing else to merge with: the op joins a flip's or gather's group as a consumer (the
      // read at computed positions stays the group's first node).
      groups_[closed].nodes.push_back(value.id);
      group_of_[value.id] = closed;
      return;
    }
    if (merged.empty()) {
      int own = NewGroup(Kind::kPointwise, value.id);
      if (all.empty()) return;
      all.insert(own);
      merged.insert(own);
    }
    int target = anchor != kNoGroup ? anchor : *merged.begin();
    for (int other : all) {
      if (other == target) continue;
      for (ir::ValueId id : groups_[other].nodes) {
        groups_[target].nodes.push_back(id);
        group_of_[id] = target;
      }
      groups_[other].nodes.clear();
    }
    if (group_of_[value.id] != target) {
      groups_[target].nodes.push_back(value.id);
      group_of_[value.id] = target;
    }
    std::sort(groups_[target].nodes.begin(), groups_[target].nodes.end());
  }

  // One-element pointwise groups that read nothing computed (a training batch norm's
  // num_batches_tracked + 1: one per batch norm, a fifth of ResNet101's launches) become one group:
  // one launch computes them all, first, since everything they read is there before any kernel runs.
  void MergeOneElementGroups() {
    std::map<ir::Shape, int> first;  // by shape ([] or [1], ...): the group the others join
    std::set<int> targets;
    for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
      if (groups_[g].kind != Kind::kPointwise || groups_[g].nodes.empty() || Closed(g)) continue;
      const bool independent = std::all_of(groups_[g].nodes.begin(), groups_[g].nodes.end(), [&](ir::ValueId id) {
        const ir::Value& value = graph_.value(id);
        if (value.type().numel() != 1 || value.type().shape != GroupShape(g)) return false;
        const std::vector<ir::NodeRef> inputs = TensorInputs(value);
        return std::all_of(inputs.begin(), inputs.end(), [&](const ir::NodeRef& ref) {
          return group_of_[ref.value] == g || graph_.value(ref.value).kind != ir::ValueKind::kOp;
        });
      });
      if (!independent) continue;
      auto [target, inserted] = first.emplace(GroupShape(g), g);
      if (inserted) continue;
      if (groups_[target->second].nodes.size() + groups_[g].nodes.size() > kMaxOneElementNodes) {
        target->second = g;  // the kernel's parameters stay far below CUDA's 4 KiB
        continue;
      }
      for (ir::ValueId id : groups_[g].nodes) {
        groups_[target->second].nodes.push_back(id);
        group_of_[id] = target->second;
      }
      groups_[g].nodes.clear();
      targets.insert(target->second);
    }
    for (int g : targets) std::sort(groups_[g].nodes.begin(), groups_[g].nodes.end());
  }

  // Moves into attention group `group` the producers of its bias that its kernel recomputes per
  // tile (IsTileRecomputable) and that nothing else reads, out of the groups planned for them:
  // no value between them is materialized. Their other group members never read them, so those
  // groups stay valid.
  void AbsorbBiasProducers(int group) {
    const auto& attention = graph_.value(groups_[group].nodes.front()).As<ir::OpNode>();
    const ir::Argument* bias = attention.FindArgument({3, "bias"});
    if (bias == nullptr || !bias->Is<ir::NodeRef>()) return;
    std::vector<bool> reached(graph_.size(), false), taken(graph_.size(), false);
    reached[bias->As<ir::NodeRef>().value] = true;
    for (ir::ValueId id = attention.id - 1; id >= 0; --id) {
      const ir::Value& value = graph_.value(id);
      if (!reached[id] || returned_[id] || !IsTileRecomputable(value)) continue;
      taken[id] = std::all_of(users_[id].begin(), users_[id].end(),
                              [&](ir::ValueId user) { return user == attention.id || taken[user]; });
      if (!taken[id]) continue;
      for (const ir::NodeRef& ref : TensorInputs(value)) reached[ref.value] = true;
    }
    for (ir::ValueId id = 0; id < attention.id; ++id) {
      if (!taken[id]) continue;
      auto& nodes = groups_[group_of_[id]].nodes;
      nodes.erase(std::remove(nodes.begin(), nodes.end(), id), nodes.end());
      groups_[group].nodes.push_back(id);
      group_of_[id] = group;
    }
    std::sort(groups_[group].nodes.begin(), groups_[group].nodes.end());
  }

  // A pointwise group of a smaller shape that broadcasts to `value`'s, whose results only `value`
  // reads (rsqrt(running_var + eps) of inference batch norm), with no arange: `value`'s kernel recomputes it from
  // its inputs, loaded once per program where they are constant over the program's block, instead
  // of a launch of its own and a tensor between the two.
  bool Absorbable(int group, const ir::Value& value) const {
    if (groups_[group].kind != Kind::kPointwise || GroupShape(group) == value.type().shape ||
        !BroadcastsTo(GroupShape(group), value.type().shape)) {
      return false;
    }
    for (ir::ValueId id : groups_[group].nodes) {
      // An arange is its own iteration space's index: in a larger space it would be another value.
      if (returned_[id] || IsArange(graph_.value(id))) return false;
      for (ir::ValueId user : users_[id]) {
        if (user != value.id && group_of_[user] != group) return false;
      }
    }
    return true;
  }

  // Two reduction groups over the same rows, neither split: one kernel can fold both (cosine
  // similarity's two norms and their dot product read each row once instead of materializing a
  // normalized operand).
  bool SameRows(int a, int b) const {
    return groups_[a].kind == Kind::kReduction && groups_[b].kind == Kind::kReduction && spaces_[a] == spaces_[b] &&
           !spaces_[a]->split();
  }

  // A flip's or a gather's group: its kernel reads its input from memory at computed positions, so
  // it merges with no other group and joins no reduction; same-shape pointwise consumers may join it.
  bool Closed(int group) const { return ReadsAtComputedPositions(graph_, graph_.value(groups_[group].nodes.front())); }

  // A pointwise group holding absorbed producers: nodes smaller than its iteration space.
  bool Absorbing(int group) const {
    if (groups_[group].kind != Kind::kPointwise) return false;
    return std::any_of(groups_[group].nodes.begin(), groups_[group].nodes.end(),
                       [&](ir::ValueId id) { return graph_.value(id).type().shape != GroupShape(group); });
  }

  // The shape of the node that started the group: a pointwise group's iteration space (its
  // absorbed producers are smaller).
  const ir::Shape& GroupShape(int group) const { return shapes_[group]; }

  // A product group (not a convolution's) whose epilogue may compute pointwise producers of its
  // output's shape; they come after the product in the graph, so it stays the group's first node.
  bool TakesProducers(int group) const {
    const ir::Value& anchor = graph_.value(groups_[group].nodes.front());
    return groups_[group].kind == Kind::kMatmul && anchor.As<ir::OpNode>().op != "aten.convolution.default";
  }

  // Whether group `consumer` reads, directly or through other values, a value of group `producer`
  // (a pointwise group feeding a product's operands cannot be its epilogue).
  bool Feeds(int producer, int consumer) const {
    std::vector<bool> seen(graph_.size(), false);
    std::vector<ir::ValueId> stack(groups_[consumer].nodes.begin(), groups_[consumer].nodes.end());
    while (!stack.empty()) {
      ir::ValueId id = stack.back();
      stack.pop_back();
      for (const ir::NodeRef& ref : TensorInputs(graph_.value(id))) {
        if (group_of_[ref.value] == producer) return true;
        if (!seen[ref.value]) {
          seen[ref.value] = true;
          stack.push_back(ref.value);
        }
      }
    }
    return false;
  }

  // Whether the union of `groups` and node `extra` would depend on itself through a value outside it.
  bool MakesCycle(const std::set<int>& groups, ir::ValueId extra) const {
    auto inside = [&](ir::ValueId id) { return id == extra || groups.count(group_of_[id]) > 0; };
    std::vector<bool> seen(graph_.size(), false);
    std::vector<ir::ValueId> stack;
    auto push_outside_inputs = [&](ir::ValueId id) {
      for (const ir::NodeRef& ref : TensorInputs(graph_.value(id))) {
        if (!inside(ref.value) && !seen[ref.value]) {
          seen[ref.value] = true;
          stack.push_back(ref.value);
        }
      }
    };
    push_outside_inputs(extra);
    for (int group : groups) {
      for (ir::ValueId id : groups_[group].nodes) push_outside_inputs(id);
    }
    while (!stack.empty()) {
      ir::ValueId id = stack.back();
      stack.pop_back();
      for (const ir::NodeRef& ref : TensorInputs(graph_.value(id))) {
        if (inside(ref.value)) return true;
        if (!seen[ref.value]) {
          seen[ref.value] = true;
          stack.push_back(ref.value);
        }
      }
    }
    return false;
  }

  // Topological order of the non-empty groups; ties go to the group whose first node comes first.
  FusionPlan Order() {
    std::vector<int> live;
    for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
      if (!groups_[g].nodes.empty()) live.push_back(g);
    }
    std::map<int, std::set<int>> consumers;
    std::map<int, int> pending;
    for (int g : live) {
      pending[g];
      for (ir::ValueId id : groups_[g].nodes) {
        for (const ir::NodeRef& ref : TensorInputs(graph_.value(id))) {
          int producer = group_of_[ref.value];
          if (producer == kNoGroup || producer == g) continue;
          if (consumers[producer].insert(g).second) ++pending[g];
        }
      }
    }
    using Entry = std::pair<ir::ValueId, int>;  // (first node, group)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
    for (int g : live) {
      if (pending[g] == 0) ready.push({groups_[g].nodes.front(), g});
    }
    FusionPlan plan;
    std::set<std::string> names;
    while (!ready.empty()) {
      int g = ready.top().second;
      ready.pop();
      FusionGroup group = groups_[g];
      group.name = UniqueName(GroupName(group), names);
      plan.groups.push_back(std::move(group));
      for (int consumer : consumers[g]) {
        if (--pending[consumer] == 0) ready.push({groups_[consumer].nodes.front(), consumer});
      }
    }
    return plan;
  }

  // The member names joined by "_" (first and last for long groups).
  std::string GroupName(const FusionGroup& group) const {
    const auto& nodes = group.nodes;
    if (nodes.size() > 3) {
      return graph_.value(nodes.front()).name + "_to_" + graph_.value(nodes.back()).name;
    }
    std::string name;
    for (ir::ValueId id : nodes) name += (name.empty() ? "" : "_") + graph_.value(id).name;
    return name;
  }

  static std::string UniqueName(std::string base, std::set<std::string>& taken) {
    std::string name = base;
    for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
    taken.insert(name);
    return name;
  }

  const ir::Graph& graph_;
  std::vector<FusionGroup> groups_;
  std::vector<std::optional<ReductionSpace>> spaces_;  // per group: what a reduction group reduces
  std::vector<ir::Shape> shapes_;                      // per group: its starting node's shape
  std::vector<int> group_of_;
  std::vector<std::vector<ir::ValueId>> users_;  // per value: the values that read it
  std::vector<bool> returned_;                   // per value: a graph output or a mutation's new value
};

bool Contains(const std::vector<ir::ValueId>& nodes, ir::ValueId id) {
  return std::find(nodes.begin(), nodes.end(), id) != nodes.end();
}

}  // namespace

const char* ToString(FusionGroup::Kind kind) {
  switch (kind) {
    case FusionGroup::Kind::kPointwise: return "pointwise";
    case FusionGroup::Kind::kReduction: return "reduction";
    case FusionGroup::Kind::kMatmul: return "matmul";
    case FusionGroup::Kind::kWindow: return "window";
    case FusionGroup::Kind::kAttention: return "attention";
    case FusionGroup::Kind::kRecurrence: return "recurrence";
    case FusionGroup::Kind::kLibrary: return "library";
    case FusionGroup::Kind::kView: return "view";
  }
  return "?";
}

FusionPlan PlanFusion(const ir::Graph& graph) { return Planner(graph).Run(); }

std::vector<ir::NodeRef> GroupInputs(const ir::Graph& graph, const FusionGroup& group) {
  std::vector<ir::NodeRef> inputs;
  for (ir::ValueId id : group.nodes) {
    for (const ir::NodeRef& ref : TensorInputs(graph.value(id))) {
      if (Contains(group.nodes, ref.value)) continue;
      if (std::find(inputs.begin(), inputs.end(), ref) == inputs.end()) inputs.push_back(ref);
    }
  }
  return inputs;
}

std::vector<ir::NodeRef> GroupOutputs(const ir::Graph& graph, const FusionGroup& group) {
  std::vector<ir::NodeRef> outputs;
  const std::vector<ir::NodeRef> live_outs = graph.LiveOuts();
  auto used_outside = [&](const ir::NodeRef& ref) {
    for (const ir::NodeRef& out : live_outs) {
      if (out == ref) return true;
    }
    for (const ir::Value& value : graph) {
      if (Contains(group.nodes, value.id)) continue;
      for (const ir::NodeRef& input : TensorInputs(value)) {
        if (input == ref) return true;
      }
    }
    return false;
  };
  for (ir::ValueId id : group.nodes) {
    for (int32_t i = 0; i < graph.value(id).num_outputs(); ++i) {
      if (used_outside(ir::NodeRef{id, i})) outputs.push_back(ir::NodeRef{id, i});
    }
  }
  return outputs;
}

std::string PrintFusionPlan(const ir::Graph& graph, const FusionPlan& plan) {
  auto refs = [&graph](const std::vector<ir::NodeRef>& list) {
    std::string text;
    for (const ir::NodeRef& ref : list) text += (text.empty() ? "" : ", ") + ir::PrintRef(graph, ref);
    return text;
  };
  std::string text = "fusion plan " + graph.name() + "\n";
  for (const FusionGroup& group : plan.groups) {
    std::string node_text;
    for (ir::ValueId id : group.nodes) node_text += (node_text.empty() ? "%" : ", %") + graph.value(id).name;
    text += std::string("  ") + ToString(group.kind) + " " + group.name + ": " + node_text + "\n";
    text += "    in:  " + refs(GroupInputs(graph, group)) + "\n";
    text += "    out: " + refs(GroupOutputs(graph, group)) + "\n";
  }
  return text;
}

}  // namespace kforge::passes
