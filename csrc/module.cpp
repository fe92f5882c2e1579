// The Python module stub whose import loads this shared object, and with it the op definitions of
// each family's file (fused.cpp, gemm.cpp, primitives.cpp, attention.cpp: schema, CUDA kernel and
// CPU refusal, one line an op).
#include <Python.h>

#include "common.hpp"

namespace {

// {op name: (torch dtype names, ...)} of the ops defined with an element list: what each takes,
// for the tests and the benchmark, so a dtype added to a list is tested without another edit.
PyObject* element_types() {
  PyObject* dict = PyDict_New();
  for (const auto& [name, types] : cudalab::torch_ops::element_types()) {
    PyObject* names = PyTuple_New(static_cast<Py_ssize_t>(types.size()));
    for (std::size_t i = 0; i < types.size(); ++i)
      PyTuple_SetItem(names, static_cast<Py_ssize_t>(i), PyUnicode_FromString(types[i].c_str()));
    PyDict_SetItemString(dict, name.c_str(), names);
    Py_DECREF(names);
  }
  return dict;
}

}  // namespace

// Importing cudalab._C loads this shared object, which runs the registrations. Limited API
// (abi3): one wheel for every CPython from 3.10. `commit` and `dirty` name the checkout setup.py
// built (the benchmark's provenance); `torch_version` the torch it was built against;
// `element_types` the dtypes of the fused ops.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  PyObject* m = PyModule_Create(&module);
  if (m != nullptr && (PyModule_AddStringConstant(m, "commit", CUDALAB_COMMIT) != 0 ||
                       PyModule_AddIntConstant(m, "dirty", CUDALAB_DIRTY) != 0 ||
                       PyModule_AddStringConstant(m, "torch_version", CUDALAB_TORCH_VERSION) != 0 ||
                       PyModule_AddObject(m, "element_types", element_types()) != 0)) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
