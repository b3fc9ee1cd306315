"""What a person reads: the evaluation report (:mod:`.reports`) as tables, text, CSV, PNG and
notebook HTML (:mod:`.report_html`), its plots (:mod:`.plots`, :mod:`.kitchen_plot`), the audit's
tables (:mod:`.audit_tables`), and one session as readable text (:mod:`.session_text`).
"""
