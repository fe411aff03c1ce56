// target.xml generated from a RegisterLayout, so register numbers in the
// description and in g/p packets cannot drift apart.
#include <string>

#include "protocol/amd64_registers.h"

namespace protocol {
namespace {

struct Bit {
  const char* name;
  int bit;
};

void append_flags(std::string& out, const char* id, std::initializer_list<Bit> bits) {
  out += "<flags id=\"";
  out += id;
  out += "\" size=\"4\">";
  for (const auto& b : bits) {
    std::string pos = std::to_string(b.bit);
    out += "<field name=\"" + std::string(b.name) + "\" start=\"" + pos + "\" end=\"" + pos + "\"/>";
  }
  out += "</flags>\n";
}

void append_core_types(std::string& out) {
  append_flags(out, "i386_eflags",
               {{"CF", 0}, {"", 1}, {"PF", 2}, {"AF", 4}, {"ZF", 6}, {"SF", 7}, {"TF", 8},
                {"IF", 9}, {"DF", 10}, {"OF", 11}, {"NT", 14}, {"RF", 16}, {"VM", 17},
                {"AC", 18}, {"VIF", 19}, {"VIP", 20}, {"ID", 21}});
}

// gdb looks a register's type up in the register's own feature, so avx512
// (xmm16-31) defines vec128 again, as gdb's own 64bit-avx512.xml does.
void append_vec128(std::string& out) {
  out +=
      "<vector id=\"v8bf16\" type=\"bfloat16\" count=\"8\"/>\n"
      "<vector id=\"v8h\" type=\"ieee_half\" count=\"8\"/>\n"
      "<vector id=\"v4f\" type=\"ieee_single\" count=\"4\"/>\n"
      "<vector id=\"v2d\" type=\"ieee_double\" count=\"2\"/>\n"
      "<vector id=\"v16i8\" type=\"int8\" count=\"16\"/>\n"
      "<vector id=\"v8i16\" type=\"int16\" count=\"8\"/>\n"
      "<vector id=\"v4i32\" type=\"int32\" count=\"4\"/>\n"
      "<vector id=\"v2i64\" type=\"int64\" count=\"2\"/>\n"
      "<union id=\"vec128\">"
      "<field name=\"v8_bfloat16\" type=\"v8bf16\"/>"
      "<field name=\"v8_half\" type=\"v8h\"/>"
      "<field name=\"v4_float\" type=\"v4f\"/>"
      "<field name=\"v2_double\" type=\"v2d\"/>"
      "<field name=\"v16_int8\" type=\"v16i8\"/>"
      "<field name=\"v8_int16\" type=\"v8i16\"/>"
      "<field name=\"v4_int32\" type=\"v4i32\"/>"
      "<field name=\"v2_int64\" type=\"v2i64\"/>"
      "<field name=\"uint128\" type=\"uint128\"/>"
      "</union>\n";
}

void append_sse_types(std::string& out) {
  append_vec128(out);
  append_flags(out, "i386_mxcsr",
               {{"IE", 0}, {"DE", 1}, {"ZE", 2}, {"OE", 3}, {"UE", 4}, {"PE", 5}, {"DAZ", 6},
                {"IM", 7}, {"DM", 8}, {"ZM", 9}, {"OM", 10}, {"UM", 11}, {"PM", 12}, {"FZ", 15}});
}

// x87 control words and mxcsr belong with their units in `info registers`
// groups rather than with the general registers.
std::string_view group_of(unsigned regnum) {
  if (regnum >= static_cast<unsigned>(Amd64Reg::fctrl) && regnum <= static_cast<unsigned>(Amd64Reg::fop))
    return "float";
  if (regnum == static_cast<unsigned>(Amd64Reg::mxcsr)) return "vector";
  return "";
}

void append_avx512_types(std::string& out) {
  append_vec128(out);
  out += "<vector id=\"v2ui128\" type=\"uint128\" count=\"2\"/>\n";
}

// The bound registers as gdb's 64bit-mpx.xml types them: bounds, and the
// status and configuration words both raw and by field.
void append_mpx_types(std::string& out) {
  out +=
      "<struct id=\"br128\">"
      "<field name=\"lbound\" type=\"uint64\"/>"
      "<field name=\"ubound_raw\" type=\"uint64\"/>"
      "</struct>\n"
      "<struct id=\"_bndstatus\" size=\"8\">"
      "<field name=\"bde\" start=\"2\" end=\"63\"/>"
      "<field name=\"error\" start=\"0\" end=\"1\"/>"
      "</struct>\n"
      "<union id=\"status\">"
      "<field name=\"raw\" type=\"data_ptr\"/>"
      "<field name=\"status\" type=\"_bndstatus\"/>"
      "</union>\n"
      "<struct id=\"_bndcfgu\" size=\"8\">"
      "<field name=\"base\" start=\"12\" end=\"63\"/>"
      "<field name=\"reserved\" start=\"2\" end=\"11\"/>"
      // One-bit fields would be bool without a type.
      "<field name=\"preserved\" start=\"1\" end=\"1\" type=\"uint64\"/>"
      "<field name=\"enabled\" start=\"0\" end=\"0\" type=\"uint64\"/>"
      "</struct>\n"
      "<union id=\"cfgu\">"
      "<field name=\"raw\" type=\"data_ptr\"/>"
      "<field name=\"config\" type=\"_bndcfgu\"/>"
      "</union>\n";
}

void append_reg(std::string& out, unsigned regnum, unsigned wire) {
  const RegisterInfo& info = kAmd64Registers[regnum];
  out += "<reg name=\"" + std::string(info.name) + "\" bitsize=\"" + std::to_string(info.bitsize) +
         "\" type=\"" + std::string(info.type) + "\" regnum=\"" + std::to_string(wire) + "\"";
  if (auto group = group_of(regnum); !group.empty()) out += " group=\"" + std::string(group) + "\"";
  out += "/>\n";
}

}  // namespace

std::string amd64_target_xml(const RegisterLayout& layout) {
  std::string out =
      "<?xml version=\"1.0\"?>\n"
      "<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n"
      "<target>\n"
      "<architecture>i386:x86-64</architecture>\n"
      "<osabi>GNU/Linux</osabi>\n";
  std::string_view current;
  for (unsigned wire = 0; wire < layout.count(); ++wire) {
    const unsigned regnum = layout.index(wire);
    std::string_view feature = kAmd64Registers[regnum].feature;
    if (feature != current) {
      if (!current.empty()) out += "</feature>\n";
      out += "<feature name=\"org.gnu.gdb.i386." + std::string(feature) + "\">\n";
      if (feature == "core") append_core_types(out);
      if (feature == "sse") append_sse_types(out);
      if (feature == "mpx") append_mpx_types(out);
      if (feature == "avx512") append_avx512_types(out);
      current = feature;
    }
    append_reg(out, regnum, wire);
  }
  out += "</feature>\n</target>\n";
  return out;
}

}  // namespace protocol
