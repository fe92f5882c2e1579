// What the attention ops' registrations share (register.cpp: attention and its backward;
// register_decode.cpp: attention_decode): their tensors' names, the dims and parameters every one
// reads, and the rules of the causal and kv_heads parameters.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "harness/problem.hpp"
#include "harness/registry.hpp"
#include "ops/attention/ids.hpp"
#include "ops/attention/reference.hpp"

namespace cudalab::harness::attention_registration {

inline constexpr char kQ[] = "q";
inline constexpr char kK[] = "k";
inline constexpr char kV[] = "v";
inline constexpr char kO[] = "o";
inline constexpr char kLse[] = "lse";

inline std::int64_t batch_of(const Problem& p) { return p.dim("batch"); }
inline std::int64_t heads_of(const Problem& p) { return p.dim("heads"); }
inline std::int64_t head_dim_of(const Problem& p) { return p.dim("head_dim"); }
inline bool causal_of(const Problem& p) { return p.param(attention_ids::kCausal) != 0; }
inline float scale_of(const Problem& p) { return attention_default_scale(head_dim_of(p)); }

// "" when parameter `name` is 0 or 1, else why not.
inline std::string flag_unsupported(const Problem& p, const char* name) {
  const double value = p.param(name);
  return value == 0 || value == 1 ? "" : std::string(name) + " is 0 or 1, got " + format_param(value);
}

// "" when parameter `name` is a whole number >= -1, else why not.
inline std::string window_unsupported(const Problem& p, const char* name) {
  const double value = p.param(name);
  return value == std::floor(value) && value >= -1 && value < 0x1p62
             ? ""
             : std::string(name) + " is -1 (unbounded) or a whole number >= 0, got " + format_param(value);
}

// "" when kv_heads is 0 (as many as heads) or a divisor of heads, else why not.
inline std::string kv_heads_unsupported(const Problem& p) {
  const double kv_heads = p.param(attention_ids::kKvHeads);
  const std::int64_t heads = heads_of(p);
  const bool whole = kv_heads == std::floor(kv_heads) && kv_heads >= 0 && kv_heads <= static_cast<double>(heads);
  if (whole && (kv_heads == 0 || heads % static_cast<std::int64_t>(kv_heads) == 0)) return "";
  return "kv_heads must be 0 (as many as heads) or a divisor of heads (" + std::to_string(heads) + "), got " +
         format_param(kv_heads);
}

// The kv heads K and V hold: the parameter, or heads when it is 0 or the op's parameters are
// refused (`supported` false), which keeps the tensors' sizes sane for the memory estimate.
inline std::int64_t kv_heads_of(const Problem& p, bool supported) {
  const auto kv_heads = static_cast<std::int64_t>(p.param(attention_ids::kKvHeads));
  return !supported || kv_heads == 0 ? heads_of(p) : kv_heads;
}

// The fields every attention launcher's arguments share (the forward's, the backward's and
// decode's), bound to the problem's tensors and workspace; K and V of `kv_heads` heads.
template <typename Args>
void bind_shared(Args& args, const Problem& problem, Tensors& tensors, std::int64_t kv_heads) {
  using T = typename Args::Element;
  args.q = tensors.data<T>(kQ);
  args.k = tensors.data<T>(kK);
  args.v = tensors.data<T>(kV);
  args.o = tensors.data<T>(kO);
  args.lse = tensors.data<float>(kLse);
  args.batch = batch_of(problem);
  args.heads = heads_of(problem);
  args.kv_heads = kv_heads;
  args.head_dim = head_dim_of(problem);
  args.scale = scale_of(problem);
  args.causal = causal_of(problem);
  args.workspace = tensors.workspace();
  args.workspace_bytes = tensors.workspace_bytes();
}

// The host copies of q, k, v, o and lse and the dims as the forward's, the backward's or decode's
// check takes them (decode sets its queries and lengths after), K and V of `kv_heads` heads and
// `seq` rows.
template <typename HostTensors>
HostTensors host_tensors(const CheckContext& c, std::int64_t kv_heads, std::int64_t seq) {
  HostTensors t;
  t.dtype = c.problem.dtype;
  t.q = c.tensors[kQ].host();
  t.k = c.tensors[kK].host();
  t.v = c.tensors[kV].host();
  t.o = c.tensors[kO].host();
  t.lse = c.tensors.host<float>(kLse);
  t.batch = batch_of(c.problem);
  t.heads = heads_of(c.problem);
  t.kv_heads = kv_heads;
  t.seq = seq;
  t.head_dim = head_dim_of(c.problem);
  t.scale = scale_of(c.problem);
  t.causal = causal_of(c.problem);
  return t;
}

}  // namespace cudalab::harness::attention_registration
