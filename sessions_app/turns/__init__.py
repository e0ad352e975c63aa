"""One conversation turn: `service.turn_slot` (what a turn holds, freed in one place) and
`service.run`; the Runner it is given (`runner`), the loop it runs on (`loop`), what a turn may
take (`limits`, `client_turns`), the model's failures (`failures`), its stages (`stages`)."""
