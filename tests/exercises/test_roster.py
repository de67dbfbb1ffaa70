"""The roster reader: what spreadsheets write loads; every broken rule fails with one exact
'file:line: message'.

Each test writes a small roster into a temporary folder and works there, so messages show
the file as ``roster.csv``.
"""

from pathlib import Path

import pytest

from exercises.roster import RosterError, Student, load_roster

SAMPLE = Path(__file__).resolve().parents[2] / "problem_bank" / "assignments" / "sample_roster.csv"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def write(text: str | bytes, name: str = "roster.csv") -> Path:
    path = Path(name)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def problems(text: str | bytes) -> list[str]:
    with pytest.raises(RosterError) as err:
        load_roster(write(text))
    assert str(err.value) == "\n".join(err.value.problems)
    return err.value.problems


# --- what loads ------------------------------------------------------------------------------

def test_plain_roster():
    roster = load_roster(write("student_id,name,email\n"
                               "s1,Ada Lovelace,ada@example.edu\n"
                               "s2,,\n"))
    assert roster == (Student("s1", "Ada Lovelace", "ada@example.edu", 2),
                      Student("s2", "", "", 3))


def test_excel_export_bom_semicolons_multiline_names_extra_columns():
    text = ("\ufeffSection; Email ;Student_ID;Full name;NAME\r\n"
            "A;zoe@example.edu;s2026001;x;Zoë Hartmann\r\n"
            "\r\n"
            'B;lukasz@example.edu;s2026002;x;"Łukasz\r\nWiśniewski"\r\n'
            ";;;;\r\n"
            "B;mai@example.edu;s2026003;x;\"Nguyễn; Thị Mai\"\r\n")
    assert load_roster(write(text)) == (
        Student("s2026001", "Zoë Hartmann", "zoe@example.edu", 2),
        Student("s2026002", "Łukasz Wiśniewski", "lukasz@example.edu", 4),
        Student("s2026003", "Nguyễn; Thị Mai", "mai@example.edu", 7))


def test_semicolon_in_a_comma_header_stays_a_value():
    roster = load_roster(write("student_id,name,email,note\ns1,Søren,s@example.edu,a;b\n"))
    assert roster == (Student("s1", "Søren", "s@example.edu", 2),)


def test_spaces_around_values_are_dropped():
    roster = load_roster(write("student_id , name,email\n  s1 ,  Ada  , ada@example.edu \n"))
    assert roster == (Student("s1", "Ada", "ada@example.edu", 2),)


def test_sample_roster_loads():
    roster = load_roster(SAMPLE)
    assert len(roster) == 30
    assert len({s.id.lower() for s in roster}) == 30
    assert all(s.email.endswith("@example.edu") for s in roster)
    assert {"Zoë Hartmann", "Łukasz Wiśniewski", "Nguyễn Thị Mai", "Søren Mikkelsen"} <= \
        {s.name for s in roster}


# --- the file --------------------------------------------------------------------------------

def test_missing_file():
    with pytest.raises(RosterError) as err:
        load_roster("nowhere.csv")
    assert err.value.problems == ["nowhere.csv: no such file"]


def test_not_utf8_names_line_and_column():
    latin1 = "student_id,name,email\ns1,Ada,a@example.edu\n\ns2,Ren\u00e9e,r@example.edu\n"
    assert problems(latin1.encode("latin-1")) == [
        "roster.csv:4: not valid UTF-8 (byte 0xe9 at column 7); save the file as UTF-8"]


def test_not_utf8_column_counts_characters():
    text = "student_id,name,email\ns1,Zoë ".encode() + b"\xff" + b",z@example.edu\n"
    assert problems(text) == [
        "roster.csv:2: not valid UTF-8 (byte 0xff at column 8); save the file as UTF-8"]


def test_empty_file():
    assert problems("\n\n") == [
        "roster.csv: the file is empty (expected a header row: student_id,name,email)"]


def test_header_only():
    assert problems("student_id,name,email\n\n") == [
        "roster.csv: no students (the file has only a header row)"]


def test_unclosed_quote():
    assert problems('student_id,name,email\ns1,"Ada,a@example.edu\ns2,Bo,b@example.edu\n') == [
        'roster.csv:2: a "quoted" value in this row is never closed']


# --- the header ------------------------------------------------------------------------------

def test_missing_column_did_you_mean():
    assert problems("studentid,name,email\ns1,Ada,a@example.edu\n") == [
        "roster.csv:1: missing column 'student_id' (the header has: studentid, name, email); "
        "did you mean 'student_id' instead of 'studentid'?"]


def test_missing_columns_with_lms_names():
    assert problems("ID,Name,E-mail\ns1,Ada,a@example.edu\n") == [
        "roster.csv:1: missing column 'student_id' (the header has: ID, Name, E-mail); "
        "did you mean 'student_id' instead of 'ID'?",
        "roster.csv:1: missing column 'email' (the header has: ID, Name, E-mail); "
        "did you mean 'email' instead of 'E-mail'?"]


def test_missing_column_without_hint():
    assert problems("student_id,email\ns1,a@example.edu\n") == [
        "roster.csv:1: missing column 'name' (the header has: student_id, email)"]


def test_header_after_blank_lines_and_column_twice():
    assert problems("\n\nstudent_id,name,email,Email\ns1,Ada,a@example.edu,b@example.edu\n") == [
        "roster.csv:3: column 'email' appears 2 times"]


# --- the rows --------------------------------------------------------------------------------

def test_wrong_number_of_fields():
    assert problems("student_id,name,email\n"
                    "s1,Lovelace, Ada,a@example.edu\n"
                    "s2,Bo\n") == [
        'roster.csv:2: 4 fields, but the header has 3 (a comma inside a value needs '
        '"double quotes")',
        "roster.csv:3: 2 fields, but the header has 3"]


def test_wrong_number_of_fields_with_semicolons():
    assert problems("student_id;name;email\ns1;Ada;Lovelace;a@example.edu\n") == [
        'roster.csv:2: 4 fields, but the header has 3 (a semicolon inside a value needs '
        '"double quotes")']


def test_line_numbers_count_lines_inside_quotes():
    assert problems('student_id,name,email\ns1,"Ada\n\nLovelace",a@example.edu\n\ns 2,Bo,\n') == [
        "roster.csv:6: student_id 's 2' is not valid: use 1 to 64 letters (A-Z, a-z), digits "
        "and . _ @ + -, starting with a letter or digit (it becomes a folder name)"]


def test_empty_student_id():
    assert problems("student_id,name,email\n ,Ada,a@example.edu\n") == [
        "roster.csv:2: empty student_id"]


@pytest.mark.parametrize("sid", ["_s1", "s/1", "zoë", "s1!", "x" * 65, ".hidden"])
def test_invalid_student_id(sid):
    assert problems(f"student_id,name,email\n{sid},Ada,a@example.edu\n") == [
        f"roster.csv:2: student_id '{sid}' is not valid: use 1 to 64 letters (A-Z, a-z), digits "
        f"and . _ @ + -, starting with a letter or digit (it becomes a folder name)"]


@pytest.mark.parametrize("sid", ["s1", "A.b_c-d+e@f", "9" * 64])
def test_valid_student_ids(sid):
    assert load_roster(write(f"student_id,name,email\n{sid},,\n"))[0].id == sid


def test_duplicate_student_id_names_both_lines():
    assert problems("student_id,name,email\ns1,Ada,\ns2,Bo,\n\ns1,Cy,\n") == [
        "roster.csv:5: duplicate student_id 's1' (also on line 2)"]


def test_duplicate_student_id_ignoring_case():
    assert problems("student_id,name,email\nab12,Ada,\nAB12,Bo,\n") == [
        "roster.csv:3: student_id 'AB12' differs only in case from 'ab12' on line 2 (their "
        "folders would collide on macOS and Windows)"]


@pytest.mark.parametrize("email", ["ada.example.edu", "ada@", "@example.edu", "a@b@example.edu",
                                   "ada lovelace@example.edu"])
def test_bad_email(email):
    assert problems(f"student_id,name,email\ns1,Ada,{email}\n") == [
        f"roster.csv:2: email '{email}' does not look like an email address (name@domain, "
        f"no spaces)"]


def test_all_problems_at_once():
    assert problems("student_id,name,email\n"
                    "s1,Ada,ada\n"
                    ",Bo,bo@example.edu\n"
                    "s 3,Cy,cy at example.edu\n"
                    "s1,Di,di@example.edu\n") == [
        "roster.csv:2: email 'ada' does not look like an email address (name@domain, no spaces)",
        "roster.csv:3: empty student_id",
        "roster.csv:4: student_id 's 3' is not valid: use 1 to 64 letters (A-Z, a-z), digits "
        "and . _ @ + -, starting with a letter or digit (it becomes a folder name)",
        "roster.csv:4: email 'cy at example.edu' does not look like an email address "
        "(name@domain, no spaces)",
        "roster.csv:5: duplicate student_id 's1' (also on line 2)"]


def test_many_problems_are_capped():
    rows = "".join(f"s{i},Ada,not-an-email\n" for i in range(70))
    found = problems("student_id,name,email\n" + rows)
    assert len(found) == 51
    assert found[0] == ("roster.csv:2: email 'not-an-email' does not look like an email "
                        "address (name@domain, no spaces)")
    assert found[-1] == "… and 20 more"
