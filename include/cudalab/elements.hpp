// Element lists: an op names the element types it takes once, as a list macro in its public
// header that applies X(T, a, b) to each (a and b are passed through, for instantiation macros),
//
//   #define CUDALAB_NORM_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
//
// and everything else is derived from it: the kernels' explicit instantiations
// (CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, warp_per_row, NormForwardArgs)) and the public
// templates', the compile-time guard on those templates (RequireElement), the registry's dtypes
// and one launcher per element (CUDALAB_ELEMENT_LIST), and the PyTorch op's dtype check and
// switch. Adding a dtype to an op is one word in that list, plus whatever its kernels must do
// differently for it.
#pragma once

#include <type_traits>

namespace cudalab {

template <typename... Ts>
struct TypeList {};

// The list after its first entry: CUDALAB_ELEMENT_LIST puts `void` in front of the items, each of
// which the list macro writes with a comma before it.
template <typename First, typename... Rest>
using TypeListAfterFirst = TypeList<Rest...>;

#define CUDALAB_ELEMENT_LIST_ITEM(T, a, b) , T
// The TypeList of an element list macro: CUDALAB_ELEMENT_LIST(CUDALAB_NORM_ELEMENTS).
#define CUDALAB_ELEMENT_LIST(ELEMENTS) ::cudalab::TypeListAfterFirst<void ELEMENTS(CUDALAB_ELEMENT_LIST_ITEM, , )>

// The explicit instantiation of a launcher template, launcher<T>(const Args<T>&, cudaStream_t).
#define CUDALAB_LAUNCHER_INSTANCE(T, launcher, Args) template void launcher<T>(const Args<T>&, cudaStream_t);

template <typename T, typename List>
struct ListContains;
template <typename T, typename... Ts>
struct ListContains<T, TypeList<Ts...>> : std::bool_constant<(std::is_same_v<T, Ts> || ...)> {};
template <typename T, typename List>
inline constexpr bool list_contains_v = ListContains<T, List>::value;

// A public template's guard: a call with an element type the op does not take fails to compile
// ("no matching function") instead of failing to link.
template <typename T, typename List>
using RequireElement = std::enable_if_t<list_contains_v<T, List>>;

// f(T*) (a null pointer of type T*) for each element of the list, in order.
template <typename... Ts, typename F>
void for_each_element(TypeList<Ts...>, F&& f) {
  (f(static_cast<Ts*>(nullptr)), ...);
}

}  // namespace cudalab
