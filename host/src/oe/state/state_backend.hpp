// Where a StateStore keeps its rows when it is not a state.sqlite file: the interface a remote
// store (the PostgreSQL one, pgstore/) implements. StateStore keeps the merge rules, the type
// checks and the mirror; a backend only stores what write() already decided.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oe/common/json.hpp"
#include "oe/common/result.hpp"

namespace oe::state {

struct HistoryRow;

// One field of one write, as stored (compact JSON text).
struct BackendRow {
  std::string field;
  std::optional<std::string> old_text;  // nullopt: no value before; an append: its marker (D17)
  std::string new_text;                 // an append: the appended items only
  bool append = false;
};

// One node's write: its rows and, when chain_id is set, its landed-write mark.
struct BackendWrite {
  std::string_view write_id;  // unique per write: lets a retried transaction see it landed
  std::string_view node_id;
  std::string_view run_id;
  std::string_view ts;
  std::string_view chain_id;  // empty: no mark
  std::string_view write_key;
  std::string_view input_key;
  const std::vector<BackendRow>& rows;
};

class StateBackend {
 public:
  virtual ~StateBackend() = default;
  // Every field's stored value (field, JSON text), for the mirror.
  virtual Result<std::vector<std::pair<std::string, std::string>>> loadSnapshot() = 0;
  // The marks landed in a chain: write_key -> input_key.
  virtual Result<std::unordered_map<std::string, std::string>> landedWrites(
      std::string_view chain_id) = 0;
  // Durable and atomic when it returns: all of the write's rows and its mark, or none.
  virtual Result<void> write(const BackendWrite& write) = 0;
  // Rows of one field (by_run false) or of one run, oldest first, as history() returns them.
  virtual Result<std::vector<HistoryRow>> history(std::string_view key, bool by_run) = 0;
  // For messages: what the store is ("PostgreSQL postgresql://…/db, scope x").
  [[nodiscard]] virtual std::string describe() const = 0;
};

}  // namespace oe::state
