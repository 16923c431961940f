// {fmt}'s compiled part, from the copy LibTorch ships in its include folder (CMakeLists.txt).
// Header-only, every translation unit compiled fmt's formatting code again: ~12 s a unit under
// the sanitizers. Here once; the explicit instantiations are those format.h declares extern.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
#if FMT_USE_LOCALE
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
#endif
namespace detail {
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE
