"""Replay findings: the codes of outputs.md and the record that carries one."""

from __future__ import annotations

from dataclasses import dataclass

CODES = (
    "bad_record", "unknown_card", "card_outside_pack", "duplicate_card", "wrong_hand_size", "turn_up_mismatch",
    "deck_mismatch", "card_not_in_hand", "revoke", "incomplete_play", "claim_mismatch", "score_mismatch",
    "total_mismatch", "winner_mismatch", "dealer_rotation", "deal_sequence", "play_after_game_end", "beg_irregular",
)


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    game_id: str | None
    deal_no: int | None
    trick: int | None
    seat: int | None
    player: str | None
    card: str | None
    source: str
    message: str

    def to_json(self) -> dict[str, str | int | None]:
        return {
            "code": self.code, "game_id": self.game_id, "deal_no": self.deal_no, "trick": self.trick,
            "seat": self.seat, "player": self.player, "card": self.card, "source": self.source,
            "message": self.message,
        }
