// The `cudalab` operator namespace: every op's schema, the CPU registration that refuses CPU
// tensors, and the Python module stub whose import runs these registrations. The CUDA kernels of
// each family register in their own file (fused.cpp, gemm.cpp, primitives.cpp,
// attention.cpp).
#include <Python.h>

#include <string>

#include <torch/library.h>

namespace {

// Functional schemas (new outputs, nothing mutated): what functionalization and torch.compile
// handle without aliasing annotations. float is a C++ double, int an int64_t.
constexpr const char* kSchemas[] = {
    "bias_act(Tensor x, Tensor bias, int activation) -> Tensor",
    "bias_act_backward(Tensor x, Tensor bias, Tensor dy, int activation) -> (Tensor, Tensor)",
    "layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) -> (Tensor, Tensor, Tensor)",
    "layer_norm_backward(Tensor x, Tensor dy, Tensor weight, Tensor mean, Tensor rstd) -> (Tensor, Tensor, Tensor)",
    "rms_norm(Tensor x, Tensor weight, float eps) -> (Tensor, Tensor)",
    "rms_norm_backward(Tensor x, Tensor dy, Tensor weight, Tensor rstd) -> (Tensor, Tensor)",
    "softmax(Tensor x) -> Tensor",
    "softmax_backward(Tensor y, Tensor dy) -> Tensor",
    "gemm(Tensor a, Tensor b, Tensor? c=None, float alpha=1., float beta=0., bool b_transposed=False) -> Tensor",
    "reduce_sum(Tensor x) -> Tensor",
    "inclusive_scan(Tensor x) -> Tensor",
    "exclusive_scan(Tensor x) -> Tensor",
    "select_at_least(Tensor x, int threshold) -> Tensor",
    "histogram(Tensor samples, int bins) -> Tensor",
    "transpose(Tensor x) -> Tensor",
    "conv2d(Tensor image, Tensor filter) -> Tensor",
    "attention(Tensor q, Tensor k, Tensor v, float? scale=None, bool causal=False) -> (Tensor, Tensor)",
    "attention_backward(Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, Tensor do, float? scale=None, "
    "bool causal=False) -> (Tensor, Tensor, Tensor)",
};

std::string op_name(const std::string& schema) { return schema.substr(0, schema.find('(')); }

// One boxed kernel for every op's CPU key: the name comes from the op's schema ("cudalab::softmax").
void cpu_tensors_refused(const c10::OperatorHandle& op, torch::jit::Stack*) {
  std::string name = op.schema().name();
  name.replace(name.find("::"), 2, ".");
  TORCH_CHECK(false, name, ": CUDA tensors only, got cpu");
}

}  // namespace

TORCH_LIBRARY(cudalab, m) {
  for (const char* schema : kSchemas) m.def(schema);
}

TORCH_LIBRARY_IMPL(cudalab, CPU, m) {
  for (const char* schema : kSchemas)
    m.impl(op_name(schema).c_str(), torch::CppFunction::makeFromBoxedFunction<&cpu_tensors_refused>());
}

// Importing cudalab._C loads this shared object, which runs the registrations above. Limited API
// (abi3): one wheel for every CPython from 3.10. `commit` and `dirty` name the checkout setup.py
// built (the benchmark's provenance).
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  PyObject* m = PyModule_Create(&module);
  if (m != nullptr && (PyModule_AddStringConstant(m, "commit", CUDALAB_COMMIT) != 0 ||
                       PyModule_AddIntConstant(m, "dirty", CUDALAB_DIRTY) != 0)) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
