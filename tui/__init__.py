"""The Textual app behind ``pokerbot play``: a person plays heads-up against a pokerbot agent."""
