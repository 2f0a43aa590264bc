// JSON schema (a subset) -> Grammar nodes, in the two forms a K3 answer
// carries values: JSON text (response_format json_schema, the JSON inside a
// typed argument) and the XTML typed argument of spec §7.6, where the value's
// type= attribute must match the schema and a string is written raw.
//
// The subset: type (a name or a list: string, number, integer, boolean,
// null, object, array), properties, required, additionalProperties (false,
// true or a schema), enum, const, items (one schema), minItems, maxItems,
// anyOf, minLength, maxLength, and the annotations title, description,
// default, examples, $schema, $id, $comment (ignored). Anything else is an
// error naming the keyword and where it is. `true` is any value.
//
// What the grammar generates (always valid under the schema, not every
// valid document): object members in the schema's property order (the order
// the prompt shows them), only declared properties when there are any; no
// duplicate-free check for objects without declared properties; JSON
// whitespace at most 20 bytes at a place; numbers of at most 15 integer
// and 15 fraction digits and a 2-digit exponent; strings with no \u escape
// of a surrogate. Every schema node must be satisfiable (enum: [] is an error).
// Thread-safety: a compiler builds one grammar; not thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "k3/tok/grammar.h"
#include "k3/tok/json_value.h"

namespace k3::tok {

class SchemaCompiler {
 public:
  // Errors are k3::Error(Usage) "origin.path: what" (origin names the schema,
  // e.g. "response_format.json_schema.schema").
  SchemaCompiler(Grammar& g, std::string origin) : g_(g), origin_(std::move(origin)) {}

  // A JSON value valid under `schema`.
  uint32_t json(const JsonValue& schema) { return json(schema, ""); }
  // Any JSON object (response_format json_object).
  uint32_t anyObject();
  // The text after `type="` of OPEN(argument, key=K, type=T): T, `"`,
  // <|sep|>, then the value (raw for strings), valid under `schema`.
  uint32_t xtmlTypedValue(const JsonValue& schema) { return xtmlTypedValue(schema, ""); }
  // A call's arguments (between OPEN(call, …) and CLOSE(call)) for a
  // function's `parameters` schema: one OPEN(argument, …) block per
  // property, in order, required ones always; without declared properties,
  // either nothing or one OPEN(json, type="object") block holding an object.
  uint32_t xtmlArguments(const JsonValue& parameters);

 private:
  struct Shape;
  Shape shapeOf(const JsonValue& s, const std::string& path);
  uint32_t json(const JsonValue& s, const std::string& path);
  uint32_t xtmlTypedValue(const JsonValue& s, const std::string& path);
  uint32_t typeValue(const Shape& sh, const std::string& type, bool xtml, const std::string& path);
  // A choice of `compile` (json or xtmlTypedValue) over the schema's anyOf items.
  uint32_t anyOfChoice(const Shape& sh, const std::string& path,
                       uint32_t (SchemaCompiler::*compile)(const JsonValue&, const std::string&));
  uint32_t object(const Shape& sh, const std::string& path);
  uint32_t array(const Shape& sh, const std::string& path);
  uint32_t freeObject(uint32_t value);
  uint32_t anyValue();
  uint32_t ws();
  uint32_t empty();
  [[noreturn]] void bad(const std::string& path, const std::string& what) const;

  Grammar& g_;
  std::string origin_;
  uint32_t ws_ = UINT32_MAX, any_ = UINT32_MAX, anyObject_ = UINT32_MAX, empty_ = UINT32_MAX;
};


}  // namespace k3::tok
