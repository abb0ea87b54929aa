// Appends protocol.md's loss functions as memest-domain nodes.
#include "estimator/loss.h"

#include "estimator/error.h"
#include "estimator/ops/registry.h"

namespace memest {
namespace {

int add_node(Graph& g, const std::string& op, const std::string& domain, std::vector<int> inputs, DType out_dtype,
             Shape out_shape, const std::string& name) {
  Node n;
  n.name = name;
  n.op = op;
  n.domain = domain;
  n.module = "loss";
  n.inputs = std::move(inputs);
  n.info = find_op(domain, op);
  int out = g.new_tensor("loss/" + name);
  g.tensors[out].dtype = out_dtype;
  g.tensors[out].shape = std::move(out_shape);
  n.outputs = {out};
  // Linked as Graph::relink() would: the new node comes after every other.
  const int index = static_cast<int>(g.nodes.size());
  for (int in : n.inputs) g.tensors[in].consumers.push_back(index);
  g.tensors[out].producer = index;
  g.nodes.push_back(std::move(n));
  return out;
}

}  // namespace

void append_loss(Graph& g, Loss loss) {
  if (g.outputs.empty()) throw Error(g.file, "", "the graph has no output to put a loss on");
  const int out = g.outputs[0];
  const Tensor& o = g.tensors[out];
  if (!o.shape) throw Error(g.file, "", "the shape of output '" + o.name + "' could not be inferred");
  const Shape shape = *o.shape;
  int loss_t = -1;
  if (loss == Loss::CE) {
    if (shape.size() < 2) {
      throw Error(g.file, "", "cross-entropy needs an output of rank 2 or more, '" + o.name + "' is " + shape_str(shape) +
                                  "; use --loss mse or --loss sum");
    }
    Shape target;
    if (shape.size() == 3) {
      target = {shape[0], shape[1]};  // language model [B, T, V]: classes last
    } else {
      target.push_back(shape[0]);  // [B, C, ...]: classes in dim 1
      for (size_t i = 2; i < shape.size(); ++i) target.push_back(shape[i]);
    }
    int y = g.new_tensor("y");
    g.tensors[y].kind = TensorKind::Input;
    g.tensors[y].dtype = DType::I64;
    g.tensors[y].shape = target;
    g.inputs.push_back(y);
    int logp = add_node(g, "LogSoftmax", "memest", {out}, DType::F32, shape, "log_softmax");
    loss_t = add_node(g, "NllLoss", "memest", {logp, y}, DType::F32, {}, "nll_loss");
  } else if (loss == Loss::MSE) {
    int y = g.new_tensor("y");  // may move g.tensors: `o` is not used past here
    g.tensors[y].kind = TensorKind::Input;
    g.tensors[y].dtype = g.tensors[out].dtype;
    g.tensors[y].shape = shape;
    g.tensors[y].dtype_follows = out;  // protocol.md: "same shape and dtype as the output" (fp16 under autocast)
    g.inputs.push_back(y);
    loss_t = add_node(g, "MseLoss", "memest", {out, y}, DType::F32, {}, "mse_loss");
  } else {
    loss_t = add_node(g, "SumLoss", "memest", {out}, DType::F32, {}, "sum");
  }
  g.tensors[loss_t].graph_output = true;
}

}  // namespace memest
