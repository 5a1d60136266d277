// LSTMModule and GRUModule: one cell step loop for both modes, over the wrapped module's weights.

#include <tdrl/modules/recurrent.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/functional.h>
#include <torch/types.h>

#include <tdrl/specs/tensor_spec.h>
#include <tensordict/errors.h>

#include "detail/names.h"

namespace tdrl::modules {

namespace {

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A bool entry of shape `batch` or `batch + [1]` as `[N, T]` in the computation's dtype.
torch::Tensor flag_as(const TensorDict& td, const NestedKey& key, const std::string& who,
                      const std::string& what, int64_t n, int64_t t, torch::Dtype dtype) {
  const torch::Tensor flag = td.get(key);
  const std::vector<int64_t>& batch = td.batch_size();
  TDRL_CHECK(flag.scalar_type() == torch::kBool, TypeError, who, ": ", what, " ", key.to_string(),
             " is ", flag.scalar_type(), "; it must be bool");
  TDRL_CHECK(flag.sizes() == batch || flag.sizes() == concat(batch, {1}), ShapeError, who, ": ",
             what, " ", key.to_string(), " has shape ", shape_str(flag.sizes()), "; expected ",
             shape_str(batch), " or ", shape_str(concat(batch, {1})), " (the batch size)");
  return flag.reshape({n, t}).to(dtype);
}

// The state along one pass of the step loop (c undefined for a GRU): zeroed on the rows that
// restart, kept over padded steps, recorded after every step. Both ways of computing a step use
// it, with `keep` and `valid` viewed to broadcast against their state's layout.
struct StateTrack {
  torch::Tensor h, c;
  std::vector<torch::Tensor> hs, cs;  // after every step
  StateTrack(torch::Tensor h0, torch::Tensor c0, int64_t steps)
      : h(std::move(h0)), c(std::move(c0)) {
    hs.reserve(static_cast<size_t>(steps));
    if (c.defined()) cs.reserve(static_cast<size_t>(steps));
  }
  // `keep`: 0 on the rows whose trajectory starts at this step.
  void restart(const torch::Tensor& keep) {
    h = h * keep;
    if (c.defined()) c = c * keep;
  }
  // `valid`: 1 on the rows that take the step, 0 on padded ones (undefined: every row).
  void advance(torch::Tensor h_new, torch::Tensor c_new, const torch::Tensor& valid) {
    if (valid.defined()) {
      h_new = h + valid * (h_new - h);
      if (c.defined()) c_new = c + valid * (c_new - c);
    }
    h = std::move(h_new);
    hs.push_back(h);
    if (c.defined()) {
      c = std::move(c_new);
      cs.push_back(c);
    }
  }
};

}  // namespace

RecurrentModuleImpl::RecurrentModuleImpl(Kind kind, RecurrentModuleOptions options)
    : TensorDictModuleBase(kind == Kind::kLSTM ? "LSTMModule" : "GRUModule"),
      kind_(kind),
      options_(std::move(options)) {
  const std::string who = name();
  TDRL_CHECK(
      options_.input_size() >= 1 && options_.hidden_size() >= 1 && options_.num_layers() >= 1,
      ValueError, who, ": input_size ", options_.input_size(), ", hidden_size ",
      options_.hidden_size(), " and num_layers ", options_.num_layers(), " must each be >= 1");
  const bool lstm = kind_ == Kind::kLSTM;
  hidden_keys_ = options_.hidden_keys();
  if (hidden_keys_.empty()) {
    hidden_keys_ = lstm ? std::vector<NestedKey>{"recurrent_state_h", "recurrent_state_c"}
                        : std::vector<NestedKey>{"recurrent_state"};
  }
  TDRL_CHECK(hidden_keys_.size() == (lstm ? 2u : 1u), ValueError, who, ": hidden_keys names ",
             hidden_keys_.size(), " entries; an LSTM's state is two (h, c), a GRU's one (h)");
  const auto in = options_.input_size(), hidden = options_.hidden_size();
  const auto layers = options_.num_layers();
  torch::OrderedDict<std::string, torch::Tensor> params;
  if (lstm) {
    lstm_ = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(in, hidden)
                                                        .num_layers(layers)
                                                        .bias(options_.bias())
                                                        .batch_first(true)));
    params = lstm_->named_parameters();
  } else {
    gru_ = register_module("gru", torch::nn::GRU(torch::nn::GRUOptions(in, hidden)
                                                     .num_layers(layers)
                                                     .bias(options_.bias())
                                                     .batch_first(true)));
    params = gru_->named_parameters();
  }
  // The wrapped module's own tensors: to(), load and optimiser steps change them in place.
  for (int64_t l = 0; l < layers; ++l) {
    const std::string s = std::to_string(l);
    Layer layer{params["weight_ih_l" + s], params["weight_hh_l" + s], {}, {}};
    if (options_.bias()) {
      layer.b_ih = params["bias_ih_l" + s];
      layer.b_hh = params["bias_hh_l" + s];
    }
    layers_.push_back(std::move(layer));
  }
  std::vector<NestedKey> in_keys{options_.in_key(), options_.is_init_key()};
  std::vector<NestedKey> out_keys{options_.out_key()};
  for (const auto& key : hidden_keys_) {
    in_keys.push_back(key);
    out_keys.push_back(NestedKey("next").join(key));
  }
  if (options_.mask_key()) in_keys.push_back(*options_.mask_key());
  set_keys(std::move(in_keys), std::move(out_keys));
}

RecurrentModuleImpl& RecurrentModuleImpl::set_recurrent_mode(bool on) {
  options_.recurrent_mode(on);
  return *this;
}

specs::CompositePtr RecurrentModuleImpl::hidden_specs(const std::vector<int64_t>& batch) const {
  const auto shape = concat(batch, {options_.num_layers(), options_.hidden_size()});
  std::vector<specs::Composite::Item> items;
  for (const auto& key : hidden_keys_)
    items.emplace_back(key, std::make_shared<specs::Unbounded>(shape));
  return specs::Composite::make(items, batch);
}

void RecurrentModuleImpl::forward_impl(const TensorDict& tensordict,
                                       const TensorDict& tensordict_out) {
  const std::string who = name();
  const bool sequence = options_.recurrent_mode();
  const bool lstm = kind_ == Kind::kLSTM;
  const int64_t L = options_.num_layers(), H = options_.hidden_size();

  // The shapes: [*B] a step, [*B, T] a sequence batch (time the last batch dim).
  const std::vector<int64_t> batch = tensordict.batch_size();
  TDRL_CHECK(!sequence || !batch.empty(), ShapeError, who,
             ": sequence mode reads a [*B, T] TensorDict (time the last batch dim); this one has "
             "batch size []; call set_recurrent_mode(false) for single steps");
  const int64_t T = sequence ? batch.back() : 1;
  const std::vector<int64_t> lead(batch.begin(), batch.end() - (sequence ? 1 : 0));
  const int64_t N = std::accumulate(lead.begin(), lead.end(), int64_t{1}, std::multiplies<>());

  // The input and is_init, required; the mask when one is declared (sequence mode).
  const auto& in_key = options_.in_key();
  TDRL_CHECK(tensordict.contains(in_key), tensordict::KeyError, who, ": no input entry ",
             in_key.to_string(), "; the TensorDict holds ",
             tensordict::nn::keys_repr(tensordict.keys(true, true)));
  const torch::Tensor x = tensordict.get(in_key);
  const auto x_shape = concat(batch, {options_.input_size()});
  TDRL_CHECK(x.sizes() == x_shape, ShapeError, who, ": the input ", in_key.to_string(),
             " has shape ", shape_str(x.sizes()), "; expected ", shape_str(x_shape),
             sequence ? " ([*B, T, input_size])" : " ([*B, input_size])");
  const auto dtype = layers_.front().w_ih.scalar_type();
  const auto& init_key = options_.is_init_key();
  TDRL_CHECK(tensordict.contains(init_key), tensordict::KeyError, who, ": no ",
             init_key.to_string(),
             " entry, which marks each trajectory's first step (where the state starts from "
             "zero); add InitTracker to the env");
  const torch::Tensor keep = 1 - flag_as(tensordict, init_key, who, "is_init", N, T, dtype);
  torch::Tensor valid;
  if (sequence && options_.mask_key()) {
    const auto& mask_key = *options_.mask_key();
    TDRL_CHECK(tensordict.contains(mask_key), tensordict::KeyError, who, ": no mask entry ",
               mask_key.to_string(), " (mask_key); split_trajectories writes it");
    valid = flag_as(tensordict, mask_key, who, "the mask", N, T, dtype);
  }

  // The state at the start: [*B, L, H] a step, [*B, T, L, H] a sequence (its first step);
  // zeros when absent.
  std::vector<torch::Tensor> state;  // per hidden key: [L, N, H]
  for (const auto& key : hidden_keys_) {
    if (!tensordict.contains(key)) {
      state.push_back(torch::zeros({L, N, H}, x.options().dtype(dtype)));
      continue;
    }
    torch::Tensor h = tensordict.get(key);
    const auto h_shape = concat(batch, {L, H});
    TDRL_CHECK(
        h.sizes() == h_shape, ShapeError, who, ": the hidden state ", key.to_string(),
        " has shape ", shape_str(h.sizes()), "; expected ", shape_str(h_shape),
        sequence ? " ([*B, T, num_layers, hidden_size])" : " ([*B, num_layers, hidden_size])");
    if (sequence) h = h.select(static_cast<int64_t>(lead.size()), 0);
    state.push_back(h.reshape({N, L, H}).transpose(0, 1));
  }

  // Which steps reset some row, read on the host once: the fused path splits the sequence
  // there, and on the CPU the step loop skips the multiply at the other steps (on a GPU it
  // multiplies at every step rather than synchronise each call).
  const bool fused = sequence && !options_.sequence_states() && !valid.defined();
  std::vector<uint8_t> resets(static_cast<size_t>(T), 1);
  if (fused || keep.is_cpu()) {
    const torch::Tensor any = (keep < 1).any(0).cpu();
    std::copy(any.data_ptr<bool>(), any.data_ptr<bool>() + T, resets.begin());
  }

  // Sequence mode without per-step states: LibTorch's fused call over each stretch that no row
  // resets inside; the rows that reset at a stretch's start start it from zero.
  if (fused) {
    const torch::Tensor xs = x.reshape({N, T, options_.input_size()});
    torch::Tensor h = state[0];
    torch::Tensor c = lstm ? state[1] : torch::Tensor();
    std::vector<torch::Tensor> outputs;
    for (int64_t start = 0; start < T;) {
      int64_t end = start + 1;
      while (end < T && !resets[static_cast<size_t>(end)]) ++end;
      const torch::Tensor k = keep.select(1, start).view({1, N, 1});
      h = h * k;
      const torch::Tensor stretch = xs.slice(1, start, end);
      if (lstm) {
        c = c * k;
        auto [out, hc] = lstm_->forward(stretch, std::make_tuple(h, c));
        outputs.push_back(out);
        h = std::get<0>(hc);
        c = std::get<1>(hc);
      } else {
        auto [out, hn] = gru_->forward(stretch, h);
        outputs.push_back(out);
        h = hn;
      }
      start = end;
    }
    const torch::Tensor output = outputs.size() == 1 ? outputs.front() : torch::cat(outputs, 1);
    tensordict_out.set(options_.out_key(), output.reshape(concat(batch, {H})));
    std::vector<torch::Tensor> finals{h};
    if (lstm) finals.push_back(c);
    for (size_t i = 0; i < hidden_keys_.size(); ++i) {
      // [L, N, H] -> [N, T, L, H], the final state at the last step (one allocation).
      torch::Tensor next = torch::zeros({N, T, L, H}, output.options());
      next.select(1, T - 1).copy_(finals[i].transpose(0, 1));
      tensordict_out.set(NestedKey("next").join(hidden_keys_[i]),
                         next.reshape(concat(batch, {L, H})));
    }
    return;
  }

  // Step by step, the state zeroed where is_init is set and kept over padded steps, one of two
  // ways (the same arithmetic): from kAtenStepRows rows up, ATen's LSTM/GRU call per step (all
  // layers at once, its fused cell kernels: 1.5x faster than the cells below at 256 rows on the
  // CPU); below that, the cells written out, whose ops cost less than ATen's per-call setup (1.6x
  // faster at one row). Measured for the LSTM by bench_modules (docs/performance.md).
  if (N >= kAtenStepRows) {
    const torch::Tensor xs = x.reshape({N, T, options_.input_size()});
    // ATen's call itself, without the module's per-call checks.
    const std::vector<torch::Tensor> weights = lstm ? lstm_->all_weights() : gru_->all_weights();
    StateTrack s(state[0], lstm ? state[1] : torch::Tensor(), T);  // [L, N, H]
    for (int64_t t = 0; t < T; ++t) {
      if (resets[static_cast<size_t>(t)]) s.restart(keep.select(1, t).view({1, N, 1}));
      const torch::Tensor step = xs.slice(1, t, t + 1);
      torch::Tensor h_new, c_new;
      if (lstm) {
        auto out = torch::lstm(step, {s.h, s.c}, weights, options_.bias(), L, /*dropout=*/0.0,
                               is_training(), /*bidirectional=*/false, /*batch_first=*/true);
        h_new = std::get<1>(out);
        c_new = std::get<2>(out);
      } else {
        h_new =
            std::get<1>(torch::gru(step, s.h, weights, options_.bias(), L, /*dropout=*/0.0,
                                   is_training(), /*bidirectional=*/false, /*batch_first=*/true));
      }
      s.advance(h_new, c_new,
                valid.defined() ? valid.select(1, t).view({1, N, 1}) : torch::Tensor());
    }

    // The output (the top layer's state; zero on padded steps) and the state after every step.
    const auto over_time = [](const std::vector<torch::Tensor>& steps) {
      // [L, N, H] per step -> [N, T, L, H].
      return (steps.size() == 1 ? steps.front().unsqueeze(2) : torch::stack(steps, 2))
          .permute({1, 2, 0, 3});
    };
    const torch::Tensor next_h = over_time(s.hs);
    const torch::Tensor top = next_h.select(2, L - 1);  // [N, T, H]
    const torch::Tensor output = valid.defined() ? top * valid.unsqueeze(2) : top;
    tensordict_out.set(options_.out_key(), output.reshape(concat(batch, {H})));
    const auto state_shape = concat(batch, {L, H});
    tensordict_out.set(NestedKey("next").join(hidden_keys_[0]), next_h.reshape(state_shape));
    if (lstm)
      tensordict_out.set(NestedKey("next").join(hidden_keys_[1]),
                         over_time(s.cs).reshape(state_shape));
    return;
  }

  // Fewer rows: the cells written out, layer by layer. The input projection of every step in one
  // product (with the hidden bias of an LSTM folded in), then the cell step by step as ATen's
  // own LSTM/GRU cells compute it.
  // Time-major inside ([T, N, F]), so that each step's slice of the projection is contiguous.
  torch::Tensor input = x.reshape({N, T, options_.input_size()}).transpose(0, 1);
  std::vector<torch::Tensor> next_h, next_c;  // per layer: [T, N, H]
  const auto stacked = [](const std::vector<torch::Tensor>& items, int64_t dim) {
    return items.size() == 1 ? items.front().unsqueeze(dim) : torch::stack(items, dim);
  };
  for (int64_t l = 0; l < L; ++l) {
    const Layer& w = layers_[static_cast<size_t>(l)];
    torch::Tensor projected = torch::nn::functional::linear(input, w.w_ih, w.b_ih);
    if (lstm && w.b_hh.defined()) projected = projected + w.b_hh;
    const torch::Tensor w_hh_t = w.w_hh.t();
    StateTrack s(state[0][l], lstm ? state[1][l] : torch::Tensor(), T);  // [N, H]
    for (int64_t t = 0; t < T; ++t) {
      if (resets[static_cast<size_t>(t)]) s.restart(keep.select(1, t).unsqueeze(1));
      const torch::Tensor gx = projected.select(0, t);
      const torch::Tensor& h = s.h;
      torch::Tensor h_new, c_new;
      if (lstm) {
        // In-place only where the backward reads the result (sigmoid_, tanh_) or nothing (add_).
        const auto gates = torch::addmm(gx, h, w_hh_t).unsafe_chunk(4, 1);
        const auto i = gates[0].sigmoid_(), f = gates[1].sigmoid_();
        const auto g = gates[2].tanh_(), o = gates[3].sigmoid_();
        c_new = (f * s.c).add_(i * g);
        h_new = o * c_new.tanh();
      } else {
        const torch::Tensor gh = w.b_hh.defined() ? torch::addmm(w.b_hh, h, w_hh_t) : h.mm(w_hh_t);
        const auto xg = gx.unsafe_chunk(3, 1);
        const auto hg = gh.unsafe_chunk(3, 1);
        const auto r = (xg[0] + hg[0]).sigmoid_();
        const auto z = (xg[1] + hg[1]).sigmoid_();
        const auto n = (xg[2] + r * hg[2]).tanh_();
        h_new = n + z * (h - n);
      }
      s.advance(h_new, c_new, valid.defined() ? valid.select(1, t).unsqueeze(1) : torch::Tensor());
    }
    input = stacked(s.hs, 0);
    next_h.push_back(input);
    if (lstm) next_c.push_back(stacked(s.cs, 0));
  }

  // The output (zero on padded steps) and the state after every step.
  input = input.transpose(0, 1);  // [N, T, H]
  torch::Tensor output = valid.defined() ? input * valid.unsqueeze(2) : input;
  tensordict_out.set(options_.out_key(), output.reshape(concat(batch, {H})));
  const auto state_shape = concat(batch, {L, H});
  const auto stacked_layers = [](const std::vector<torch::Tensor>& layers) {
    // [T, N, H] per layer -> [N, T, L, H].
    return (layers.size() == 1 ? layers.front().unsqueeze(2) : torch::stack(layers, 2))
        .transpose(0, 1);
  };
  std::vector<std::vector<torch::Tensor>*> per_key{&next_h};
  if (lstm) per_key.push_back(&next_c);
  for (size_t i = 0; i < hidden_keys_.size(); ++i) {
    tensordict_out.set(NestedKey("next").join(hidden_keys_[i]),
                       stacked_layers(*per_key[i]).reshape(state_shape));
  }
}

void RecurrentModuleImpl::print_to(std::ostream& stream) const {
  stream << name() << "(input_size=" << options_.input_size()
         << ", hidden_size=" << options_.hidden_size() << ", num_layers=" << options_.num_layers()
         << ", in_keys=" << tensordict::nn::keys_repr(in_keys())
         << ", out_keys=" << tensordict::nn::keys_repr(out_keys())
         << ", recurrent_mode=" << (options_.recurrent_mode() ? "True" : "False") << ")";
}

std::vector<std::shared_ptr<RecurrentModuleImpl>> recurrent_cores(
    const torch::nn::Module& network) {
  // A core shared by two parts of the network (an actor and a critic) is listed once.
  std::vector<std::shared_ptr<RecurrentModuleImpl>> out;
  for (const auto& m : network.modules(/*include_self=*/true)) {
    auto core = std::dynamic_pointer_cast<RecurrentModuleImpl>(m);
    if (core && std::find(out.begin(), out.end(), core) == out.end()) out.push_back(core);
  }
  return out;
}

RecurrentModeGuard::RecurrentModeGuard(std::vector<std::shared_ptr<RecurrentModuleImpl>> cores,
                                       bool recurrent_mode, std::optional<bool> sequence_states) {
  for (auto& core : cores) {
    saved_.push_back({core, core->recurrent_mode(), core->options().sequence_states()});
    core->set_recurrent_mode(recurrent_mode);
    if (sequence_states) core->set_sequence_states(*sequence_states);
  }
}

RecurrentModeGuard::~RecurrentModeGuard() {
  // Newest first, so that a core listed twice ends as it came.
  for (auto s = saved_.rbegin(); s != saved_.rend(); ++s)
    s->core->set_recurrent_mode(s->recurrent_mode).set_sequence_states(s->sequence_states);
}

const std::vector<std::string>& recurrent_core_names() {
  static const std::vector<std::string> names{"lstm", "gru"};
  return names;
}

std::shared_ptr<RecurrentModuleImpl> make_recurrent_module(const std::string& core,
                                                           RecurrentModuleOptions options) {
  if (core == "lstm") return std::make_shared<LSTMModuleImpl>(std::move(options));
  if (core == "gru") return std::make_shared<GRUModuleImpl>(std::move(options));
  throw tensordict::ValueError("make_recurrent_module: no recurrent core '" + core +
                               "'; the cores are lstm, gru");
}

}  // namespace tdrl::modules
